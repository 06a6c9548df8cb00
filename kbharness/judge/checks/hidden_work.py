"""No hidden work: device work the end event did not wait for (another stream's) keeps the
device busy after the timer's own stream is done. Measured as the time from that stream's
last event to a device-wide synchronize, two back-to-back host calls, so launch latency and
a host busy compiling barely reach it (the whole call's wall clock moved by milliseconds
under load and judged two of KernelBench's references against themselves incorrect)."""
from __future__ import annotations

import statistics

from kbharness.judge.checks.registry import TimingRun, register

HIDDEN_WORK_MS = 0.2
HIDDEN_WORK_FRACTION = 0.25


@register("no hidden work", "timing")
def nothing_left_running(run: TimingRun) -> str:
    extra = statistics.median(run.pending_new) - statistics.median(run.pending_ref)
    limit = HIDDEN_WORK_MS + HIDDEN_WORK_FRACTION * statistics.median(run.new_ms)
    if extra > limit:
        return (f"asynchronous work outside the timed region: the device stays busy {extra:.3f} ms longer than "
                f"the reference's after the call's end event (limit {limit:.3f} ms)")
    return ""
