"""Reports written from the store: CSV (one row per evaluation, ``leaderboard.COLUMNS``),
JSON (the full records) and a Markdown summary people read in a pull request or a wiki.
The summary's leaderboards have a row per problem and measured settings, and list apart
the records left out for a speedup that cannot be trusted."""
from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import pandas as pd

from kbharness.reporting import leaderboard as lb
from kbharness.reporting.render import fmt_ms, left_out_lines
from kbharness.common.results import EvalRecord

REPORT_FAST_P = (0.0, 0.5, 1.0, 1.5, 2.0)
# A C++/CUDA build takes tens of seconds; a load from the build cache about 0.1 s.
CACHED_BUILD_S = 1.0


def real_builds(frame: pd.DataFrame, n: int = 5) -> tuple[pd.DataFrame, int]:
    """The ``n`` slowest builds, and how many evaluations took under ``CACHED_BUILD_S`` (a cache
    load, or nothing to compile), which would otherwise be listed as 0.1 s compiles."""
    timed = frame.dropna(subset=["build_s"])
    real = timed[timed["build_s"] >= CACHED_BUILD_S]
    return real.sort_values("build_s", ascending=False).head(n), len(timed) - len(real)


def write_csv(records: Sequence[EvalRecord], path: Path) -> None:
    lb.records_frame(records).to_csv(path, index=False)


def write_json(records: Sequence[EvalRecord], path: Path) -> None:
    Path(path).write_text(json.dumps([r.to_dict() for r in records], indent=1, default=str) + "\n")


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return str(value).replace("|", "\\|").replace("\n", " ")


def md_table(header: Sequence[str], rows: Sequence[Sequence]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def markdown(records: Sequence[EvalRecord], source: str = "") -> str:
    frame = lb.latest(lb.records_frame(records))
    gpus = sorted({str(g) for g in frame["gpu"].dropna()}) or sorted({str(d) for d in frame["device"].dropna()})
    out = ["# kbharness report", "",
           f"{len(frame)} evaluations of {frame['problem'].nunique()} problems on {', '.join(gpus) or '-'}"
           f"{f', from {source}' if source else ''}; written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.", ""]
    counts = frame["verdict"].value_counts()
    out += ["## Verdicts", "", *md_table(["verdict", "evaluations"], list(counts.items())), ""]
    board = lb.leaderboard(frame)
    board["level"] = lb.level(board)
    with_settings = bool((board["measured"] != "").any())
    summary = []
    for level, part in board.groupby("level", sort=True):
        label = "problems outside a levelN tree" if level == lb.OTHER_LEVEL else f"level {level}"
        out += [f"## Leaderboard, {label}", ""]
        rows = [(r.problem, *((r.measured or None,) if with_settings else ()),
                 Path(r.solution).name if isinstance(r.solution, str) else None,
                 f"{r.speedup:.2f}×" if pd.notna(r.speedup) else None, fmt_ms(r.ref_median_ms), fmt_ms(r.new_median_ms),
                 f"{100 * r.sol:.0f}% ({r.bound})" if pd.notna(r.sol) else None, f"{r.correct}/{r.candidates}")
                for r in part.itertuples()]
        out += [*md_table(["problem", *(("settings",) if with_settings else ()), "best solution", "speedup",
                           "reference", "candidate", "SOL", "correct/evaluated"], rows), ""]
        summary.append((label, part))
    summary.append(("all", board))
    fast_rows = []
    for label, part in summary:
        fast = lb.fast_p(part, REPORT_FAST_P)
        geo = lb.geomean_speedup(part)
        fast_rows.append((label, len(part), *(f"{fast[p]:.2f}" for p in REPORT_FAST_P),
                          None if math.isnan(geo) else f"{geo:.2f}×"))
    apart = left_out_lines(lb.left_out(frame), prefix="- ")
    out += ["## fast_p and geometric-mean speedup", "",
            "fast_p: the fraction of problems (per measured settings) whose best candidate is correct and more than "
            f"p times faster{'; the records left out below do not count' if apart else ''}.", "",
            *md_table(["", "problems", *(f"fast_{p:g}" for p in REPORT_FAST_P), "geomean"], fast_rows), ""]
    if apart:
        out += ["## Left out", "", "Records whose speedup cannot be trusted, kept off the leaderboards and fast_p.", "",
                *apart, ""]
    builds, loads = real_builds(frame)
    if loads or not builds.empty:
        out += ["## Slowest compiles", ""]
    if loads:
        out += [f"{loads} evaluation{'s' if loads != 1 else ''} took under a second to build (a load from the "
                "build cache or nothing to compile), not shown.", ""]
    if not builds.empty:
        out += [*md_table(["problem", "solution", "build"],
                          [(r.problem, Path(r.solution).name, f"{r.build_s:.1f} s") for r in builds.itertuples()]), ""]
    flagged = frame[frame["flags"].fillna("") != ""]
    if not flagged.empty:
        out += ["## Flags", "", *[f"- {r.problem} {Path(r.solution).name}: {r.flags}" for r in flagged.itertuples()], ""]
    return "\n".join(out)
