"""Implausible speedup: far beyond what kernels usually gain, worth a human look at both
models' kernels (kept in the record); flagged, not failed."""
from __future__ import annotations

import statistics

from kbharness.judge.checks.registry import TimingRun, register


@register("implausible speedup", "timing", "flag")
def within_reason(run: TimingRun) -> str:
    if not (run.new_ms and run.ref_ms):
        return ""
    speedup = statistics.median(run.ref_ms) / statistics.median(run.new_ms)
    if speedup <= run.max_speedup:
        return ""
    return (f"implausible speedup: {speedup:.1f}x exceeds {run.max_speedup:g}x; review the kernels of both models "
            "in the record")
