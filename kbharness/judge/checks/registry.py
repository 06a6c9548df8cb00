"""The checks an evaluation runs beside the output comparison, each in a module of its own.

A check is registered with its name (what a failure is reported as), the phase it runs in
and its severity: ``fail`` makes the verdict incorrect, ``flag`` notes the record for
review. Each phase hands its checks one frozen context; a check returns '' when it holds,
else what it saw. The comparison with the reference itself is not a check here: it is the
verdict (with float64 arbitration), in ``evaluate``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

# trial: after each checked call; repeat: after two calls on the same inputs and RNG state;
# timing: after the timed calls.
PHASES = ("trial", "repeat", "timing")
SEVERITIES = ("fail", "flag")


@dataclass(frozen=True)
class Check:
    name: str
    phase: str
    severity: str
    run: Callable[[Any], str]


_REGISTRY: list[Check] = []


def register(name: str, phase: str, severity: str = "fail") -> Callable[[Callable[[Any], str]], Callable[[Any], str]]:
    if phase not in PHASES or severity not in SEVERITIES:
        raise ValueError(f"check {name!r}: phase {phase!r} or severity {severity!r} unknown")

    def add(run: Callable[[Any], str]) -> Callable[[Any], str]:
        _REGISTRY.append(Check(name, phase, severity, run))
        return run

    return add


def for_phase(phase: str) -> list[Check]:
    """The phase's checks in registration order (the order their modules are imported in)."""
    return [c for c in _REGISTRY if c.phase == phase]


@dataclass(frozen=True)
class TrialCall:
    """One checked call: ``expected_in`` is what its inputs must hold afterwards (the reference's
    inputs after its own call, so an in-place reference is allowed), ``new_in`` what the
    candidate left in them; whether its output shares memory with an input or a parameter is
    the runner's report (the judge holds only copies)."""

    seed: int
    expected_in: list
    new_in: list
    out_aliases_input: bool
    out_aliases_param: bool
    ref_aliases_input: bool


@dataclass(frozen=True)
class RepeatCall:
    """Two calls of the candidate on the same inputs from the same RNG state."""

    seed: int
    first: Any
    second: Any
    atol: float
    rtol: float
    stochastic: bool
    same_memory: bool = False


@dataclass(frozen=True)
class TimingRun:
    """The timed calls of both models: per-call device times, the device time still pending
    after each call's stream was done, and how many candidate calls were host-bound."""

    new_ms: tuple[float, ...]
    ref_ms: tuple[float, ...]
    pending_new: tuple[float, ...]
    pending_ref: tuple[float, ...]
    host_bound: int
    max_speedup: float
