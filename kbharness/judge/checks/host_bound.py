"""Host-bound: the device waited for the candidate's Python in most timed calls (a
synchronize inside forward), so its times include host time; flagged, not failed."""
from __future__ import annotations

from kbharness.judge.checks.registry import TimingRun, register


@register("host-bound", "timing", "flag")
def device_kept_busy(run: TimingRun) -> str:
    if run.host_bound <= len(run.new_ms) // 2:
        return ""
    return (f"host-bound: the device waited for the candidate's host code in {run.host_bound} of {len(run.new_ms)} "
            "timed calls (a synchronize inside forward?); those times include it")
