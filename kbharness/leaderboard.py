"""Tables computed from stored records with pandas: one row per evaluation, and the leaderboard.

Metrics follow KernelBench: fast_p is the fraction of problems whose best candidate is
correct *and* more than p times faster than the reference (fast_0 is plain correctness).
"""
from __future__ import annotations

from typing import Iterable, Sequence

import pandas as pd

from kbharness.results import EvalRecord
from kbharness.stats import geometric_mean

FAST_P = (0.0, 1.0, 1.5, 2.0)
COLUMNS = [
    "timestamp_utc", "problem", "solution", "solution_sha256", "verdict", "message",
    "max_abs", "max_rel", "ref_median_ms", "new_median_ms", "speedup", "n_runs",
    "device", "gpu", "torch", "cuda", "precision", "build_s", "settings_key",
    "precision_tier", "floor_ms", "bound", "ref_sol", "sol", "flags", "baseline", "speedup_eager", "speedup_compile",
]


BOARD_COLUMNS = ["problem", "solution", "speedup", "ref_median_ms", "new_median_ms", "sol", "bound",
                 "candidates", "correct"]


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
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def latest(frame: pd.DataFrame) -> pd.DataFrame:
    """Keep only the newest evaluation of each (problem, solution content, settings, device)."""
    if frame.empty:
        return frame
    ordered = frame.sort_values("timestamp_utc", kind="stable")
    return ordered.drop_duplicates(["problem", "solution_sha256", "settings_key", "device"], keep="last")


def leaderboard(frame: pd.DataFrame) -> pd.DataFrame:
    """Best correct candidate per problem (by speedup); problems with none show no speedup."""
    frame = latest(frame)
    rows = []
    for problem, group in frame.groupby("problem", sort=True):
        correct = group[group["verdict"] == "correct"].dropna(subset=["speedup"])
        if correct.empty:
            rows.append({"problem": problem, "solution": None, "speedup": None, "ref_median_ms": None,
                         "new_median_ms": None, "sol": None, "bound": None, "candidates": len(group), "correct": 0})
            continue
        best = correct.loc[correct["speedup"].idxmax()]
        rows.append({"problem": problem, "solution": best["solution"], "speedup": best["speedup"],
                     "ref_median_ms": best["ref_median_ms"], "new_median_ms": best["new_median_ms"],
                     "sol": best["sol"], "bound": best["bound"], "candidates": len(group), "correct": len(correct)})
    return pd.DataFrame(rows, columns=BOARD_COLUMNS)


def level(frame: pd.DataFrame) -> pd.Series:
    """The level of each row's problem ("2" for "2/71"), for per-level tables and plots."""
    return frame["problem"].str.split("/").str[0]


def fast_p(board: pd.DataFrame, ps: Sequence[float] = FAST_P) -> dict[float, float]:
    """Fraction of problems on the board whose best correct candidate beats ``p``."""
    n = len(board)
    speedups = board["speedup"].fillna(0.0)
    return {p: float(((speedups > p) & board["solution"].notna()).sum() / n) if n else 0.0 for p in ps}


def geomean_speedup(board: pd.DataFrame) -> float:
    return geometric_mean(board["speedup"].dropna().tolist())
