"""How long each device sat idle during a run: every evaluation's span on the driver's clock
(its worker's start to its end), less its build phase, which leaves the device waiting on a
compiler. A device is busy one evaluation at a time (one worker a GPU), so its busy time is
the sum of its spans'."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    device: str
    start: float
    end: float
    build_s: float = 0.0

    @property
    def busy_s(self) -> float:
        return max(0.0, self.end - self.start - self.build_s)


def idle_fractions(spans: list[Span], start: float, end: float) -> dict[str, float]:
    """Per device that ran anything, the fraction of ``[start, end]`` it was not busy."""
    wall = max(end - start, 1e-9)
    busy: dict[str, float] = {}
    for s in spans:
        busy[s.device] = busy.get(s.device, 0.0) + s.busy_s
    return {device: max(0.0, 1 - b / wall) for device, b in sorted(busy.items())}


def describe(spans: list[Span], start: float, end: float) -> str:
    """``device idle: cuda:0 23%, cuda:1 19% of 312 s (build phases and waits for builds count as idle)``."""
    fractions = idle_fractions(spans, start, end)
    if not fractions:
        return ""
    parts = ", ".join(f"{device} {100 * f:.0f}%" for device, f in fractions.items())
    return f"device idle: {parts} of {end - start:.0f} s (build phases and waits for builds count as idle)"
