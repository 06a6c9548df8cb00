"""A run set against a saved earlier one, in the manner of pytest-benchmark's compare.

A record is matched with the newest saved record of the same problem and candidate
content, or failing that the same problem and file name (an edited kernel), made on the
same kind of device and the same GPU model (an H100's speedups say nothing of an H200's) with
the same measured settings (a batch-4 speedup says nothing of a batch-16 one).
A speedup counts as changed only when the saved value lies outside the new run's bootstrap
95% interval and differs by more than ``threshold``: the interval covers one process's timed
calls, while two runs differ by up to about 2% (0.1-0.8% between two H200 sweeps on one
machine, up to 1.7% on a freshly started one, 1.3% between two H100 sweeps), so the interval
alone marks noise. A correct candidate that stopped being correct is always a regression."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from kbharness.reporting.leaderboard import measured_settings
from kbharness.common.results import EvalRecord
from kbharness.common.stats import speedup_ci

DEFAULT_THRESHOLD = 0.02


@dataclass(frozen=True)
class Change:
    record: EvalRecord
    previous: EvalRecord | None
    status: str
    ci: tuple[float, float] | None = None

    def text(self) -> str:
        name = Path(self.record.solution_path).name
        if self.previous is None:
            return f"{name}: not in the saved run"
        before, now = self.previous, self.record
        if before.verdict is not now.verdict:
            return f"{name}: {self.status}: {before.verdict.value} → {now.verdict.value}"
        if self.ci is None:
            return f"{name}: {self.status}: {now.verdict.value} as before"
        lo, hi = self.ci
        return (f"{name}: {self.status} against the saved run: {before.speedup:.2f}× → {now.speedup:.2f}× "
                f"(95% CI {lo:.2f}–{hi:.2f})")


def _measured_on(r: EvalRecord) -> tuple[str, str, str]:
    """What two records must share for their speedups to be compared: device kind, GPU model, measured settings."""
    return str(r.env.get("device", "")).split(":")[0], str(r.env.get("gpu") or ""), measured_settings(r.settings)


def against(records: Sequence[EvalRecord], saved: Iterable[EvalRecord],
            threshold: float = DEFAULT_THRESHOLD) -> list[Change]:
    by_sha, by_name = {}, {}
    for r in sorted(saved, key=lambda r: r.timestamp_utc):
        by_sha[(r.problem, r.solution_sha256, _measured_on(r))] = r
        by_name[(r.problem, Path(r.solution_path).name, _measured_on(r))] = r
    changes = []
    for r in records:
        prev = (by_sha.get((r.problem, r.solution_sha256, _measured_on(r)))
                or by_name.get((r.problem, Path(r.solution_path).name, _measured_on(r))))
        changes.append(_change(r, prev, threshold))
    return changes


def _change(now: EvalRecord, before: EvalRecord | None, threshold: float) -> Change:
    if before is None:
        return Change(now, None, "new")
    if before.correct and not now.correct:
        return Change(now, before, "regression")
    if now.correct and not before.correct:
        return Change(now, before, "improvement")
    if not now.correct or now.speedup is None or before.speedup is None:
        return Change(now, before, "unchanged")
    lo, hi = speedup_ci(now.ref_timing.times_ms, now.new_timing.times_ms)
    beyond = abs(now.speedup / before.speedup - 1) > threshold
    status = ("regression" if beyond and before.speedup > hi else
              "improvement" if beyond and before.speedup < lo else "unchanged")
    return Change(now, before, status, (lo, hi))
