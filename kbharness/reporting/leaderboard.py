"""Tables computed from stored records with pandas: one row per evaluation, and the leaderboard.

Metrics follow KernelBench: fast_p is the fraction of problems whose best candidate is
correct *and* more than p times faster than the reference (fast_0 is plain correctness).
A leaderboard row is a problem *and* the settings that change what is measured (sizes,
precision, tolerance, baseline, backward, judge, CUDA graphs): a batch-16 speedup and a
batch-4 one are two results, not one to take the best of. Records whose speedup cannot be
trusted (``results.UNTRUSTED_FLAGS``) are left out of the board and fast_p, and listed apart.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import pandas as pd

from kbharness.common.results import EvalRecord, untrusted_reason
from kbharness.common.spec import DEFAULT_TOLERANCE, Settings
from kbharness.common.stats import geometric_mean

FAST_P = (0.0, 1.0, 1.5, 2.0)
COLUMNS = [
    "timestamp_utc", "problem", "solution", "solution_sha256", "verdict", "message",
    "max_abs", "max_rel", "ref_median_ms", "new_median_ms", "speedup", "n_runs",
    "device", "gpu", "torch", "cuda", "precision", "build_s", "settings_key",
    "precision_tier", "floor_ms", "bound", "ref_sol", "sol", "flags", "baseline", "speedup_eager", "speedup_compile",
    "measured", "untrusted", "machine",
]


BOARD_COLUMNS = ["problem", "measured", "solution", "speedup", "ref_median_ms", "new_median_ms", "sol", "bound",
                 "candidates", "correct"]
LEFT_OUT_COLUMNS = ["problem", "measured", "solution", "verdict", "reason"]
_DEFAULTS = Settings()


def _g(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def measured_settings(settings: dict[str, Any]) -> str:
    """The settings that change what is measured, where they differ from the defaults, e.g.
    ``batch_size=16 fp16 tol=0.001``; '' for a default run."""
    parts = [f"{k}={_g(v)}" for k, v in sorted((settings.get("size_overrides") or {}).items())]
    precision = settings.get("precision") or _DEFAULTS.precision
    if precision != _DEFAULTS.precision:
        parts.append(precision)
    default_tol = DEFAULT_TOLERANCE.get(precision, DEFAULT_TOLERANCE[_DEFAULTS.precision])
    atol, rtol = (default_tol if settings.get(k) is None else settings[k] for k in ("atol", "rtol"))
    if atol == rtol != default_tol:
        parts.append(f"tol={_g(atol)}")
    elif (atol, rtol) != (default_tol, default_tol):
        parts.append(f"atol={_g(atol)} rtol={_g(rtol)}")
    for name, label in (("baseline", "baseline"), ("judge", "check")):
        value = settings.get(name) or getattr(_DEFAULTS, name)
        if value != getattr(_DEFAULTS, name):
            parts.append(f"{label}={value}")
    parts += [label for name, label in (("backward", "backward"), ("cuda_graph", "cuda-graph")) if settings.get(name)]
    return " ".join(parts)


def records_frame(records: Iterable[EvalRecord]) -> pd.DataFrame:
    """One row per evaluation, with the stable column names above."""
    rows = []
    for r in records:
        rows.append({
            "timestamp_utc": r.timestamp_utc,
            "problem": r.problem,
            "solution": r.solution_path,
            "solution_sha256": r.solution_sha256,
            "verdict": r.verdict.value,
            "message": r.message,
            "max_abs": r.max_abs,
            "max_rel": r.max_rel,
            "ref_median_ms": r.ref_timing.median_ms if r.ref_timing else None,
            "new_median_ms": r.new_timing.median_ms if r.new_timing else None,
            "speedup": r.speedup if r.correct else None,
            "n_runs": r.new_timing.n if r.new_timing else 0,
            "device": r.env.get("device"),
            "gpu": r.env.get("gpu"),
            "torch": r.env.get("torch"),
            "cuda": r.env.get("cuda"),
            "precision": r.settings.get("precision"),
            "build_s": r.build_s,
            "settings_key": r.settings_key,
            "precision_tier": r.precision_tier,
            "floor_ms": r.floor_ms,
            "bound": r.roofline.get("bound"),
            "ref_sol": r.sol("ref"),
            "sol": r.sol("new") if r.correct else None,
            "flags": "; ".join(r.flags),
            "baseline": r.baseline_used,
            "speedup_eager": r.speedup_over("eager") if r.correct else None,
            "speedup_compile": r.speedup_over("compile") if r.correct else None,
            "measured": measured_settings(r.settings),
            "untrusted": untrusted_reason(r.flags),
            "machine": r.env.get("gpu") or r.env.get("device") or "",
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def latest(frame: pd.DataFrame) -> pd.DataFrame:
    """Keep only the newest evaluation of each (problem, solution content, settings, machine):
    an H200's record does not replace an H100's."""
    if frame.empty:
        return frame
    ordered = frame.sort_values("timestamp_utc", kind="stable")
    return ordered.drop_duplicates(["problem", "solution_sha256", "settings_key", "machine"], keep="last")


def _per_machine(frame: pd.DataFrame) -> pd.DataFrame:
    """Where the records come from more than one machine (GPU model, or the CPU), the machine
    joins the measured settings, so each gets its own leaderboard row."""
    if frame.empty or frame["machine"].nunique() <= 1:
        return frame
    return frame.assign(measured=(frame["measured"].fillna("") + " " + frame["machine"]).str.strip())


def leaderboard(frame: pd.DataFrame) -> pd.DataFrame:
    """Best correct candidate per problem and measured settings (by speedup), records whose
    speedup cannot be trusted left out; rows with no correct candidate show no speedup."""
    frame = _per_machine(latest(frame))
    frame = frame[frame["untrusted"].fillna("") == ""]
    rows = []
    for (problem, measured), group in frame.groupby(["problem", "measured"], sort=True):
        correct = group[group["verdict"] == "correct"].dropna(subset=["speedup"])
        row = {"problem": problem, "measured": measured, "candidates": len(group), "correct": len(correct)}
        if not correct.empty:
            best = correct.loc[correct["speedup"].idxmax()]
            row |= {k: best[k] for k in ("solution", "speedup", "ref_median_ms", "new_median_ms", "sol", "bound")}
        rows.append(row)
    return pd.DataFrame(rows, columns=BOARD_COLUMNS)


def left_out(frame: pd.DataFrame) -> pd.DataFrame:
    """The newest records kept off the leaderboard because their speedup cannot be trusted, with why."""
    frame = _per_machine(latest(frame))
    apart = frame[frame["untrusted"].fillna("") != ""].sort_values(["problem", "measured", "solution"], kind="stable")
    return apart.rename(columns={"untrusted": "reason"})[LEFT_OUT_COLUMNS].reset_index(drop=True)


OTHER_LEVEL = "other"


def level(frame: pd.DataFrame) -> pd.Series:
    """The level of each row's problem ("2" for "2/71"; ``OTHER_LEVEL`` for a problem outside a
    levelN tree, keyed by name and digest), for per-level tables and plots."""
    parts = frame["problem"].astype(str).str.split("/")
    return parts.map(lambda p: p[0] if len(p) == 2 else OTHER_LEVEL)


def fast_p(board: pd.DataFrame, ps: Sequence[float] = FAST_P) -> dict[float, float]:
    """Fraction of the board's rows (problem and measured settings) whose best correct candidate beats ``p``."""
    n = len(board)
    speedups = board["speedup"].fillna(0.0)
    return {p: float(((speedups > p) & board["solution"].notna()).sum() / n) if n else 0.0 for p in ps}


def geomean_speedup(board: pd.DataFrame) -> float:
    return geometric_mean(board["speedup"].dropna().tolist())
