"""Turning records and frames into rich tables and one-line summaries; nothing is computed here
that the library does not already hold, and nothing here decides a verdict."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import pandas as pd
from rich.table import Table
from rich.text import Text

from kbharness.common.problems import Problem
from kbharness.common.results import EvalRecord, Verdict
from kbharness.common.stats import relative_spread, speedup_ci

NOISY_SPREAD = 0.05
_STYLE = {Verdict.CORRECT: "green", Verdict.INCORRECT: "red", Verdict.NO_CODE: "yellow"}


def problems_table(problems: Sequence[Problem]) -> Table:
    table = Table(title=f"{len(problems)} problems")
    for col in ("level", "id", "name", "path"):
        table.add_column(col, justify="right" if col in ("level", "id") else "left")
    for p in problems:
        table.add_row(str(p.level), str(p.id), p.name, str(p.path))
    return table


def fmt_ms(ms: float | None) -> str:
    if ms is None or (isinstance(ms, float) and math.isnan(ms)):
        return "-"
    if ms < 1:
        return f"{ms * 1000:.1f} µs"
    if ms < 1000:
        return f"{ms:.3f} ms"
    return f"{ms / 1000:.2f} s"


def fmt_err(x: float | None) -> str:
    return "-" if x is None else f"{x:.2e}"


def speedup_text(record: EvalRecord) -> str:
    """``1.52× [1.49, 1.55]``: the median ratio with its bootstrap 95% interval."""
    if not record.correct or record.speedup is None:
        return "-"
    lo, hi = speedup_ci(record.ref_timing.times_ms, record.new_timing.times_ms)
    return f"{record.speedup:.2f}× [{lo:.2f}, {hi:.2f}]"


def timing_text(record: EvalRecord, which: str) -> str:
    t = getattr(record, which)
    if t is None:
        return "-"
    return f"{fmt_ms(t.median_ms)} ({fmt_ms(t.min_ms)}–{fmt_ms(t.max_ms)})"


def results_table(records: Sequence[EvalRecord], title: str = "") -> Table:
    """One row per record; a problem column when the records span more than one problem."""
    table = Table(title=title or None, show_lines=False)
    many = _many_problems(records)
    if many:
        table.add_column("problem")
    table.add_column("solution")
    table.add_column("verdict")
    table.add_column("max abs err", justify="right")
    table.add_column("max rel err", justify="right")
    table.add_column("reference (median, min–max)", justify="right")
    table.add_column("candidate (median, min–max)", justify="right")
    table.add_column("speedup [95% CI]", justify="right")
    table.add_column("runs", justify="right")
    table.add_column("precision", justify="left")
    table.add_column("SOL (ref → new)", justify="right")
    table.add_column("peak mem", justify="right")
    for r in records:
        table.add_row(
            *([r.problem] if many else []),
            Path(r.solution_path).name,
            Text(r.verdict.value, style=_STYLE.get(r.verdict, "magenta")),
            fmt_err(r.max_abs),
            fmt_err(r.max_rel),
            timing_text(r, "ref_timing"),
            timing_text(r, "new_timing"),
            speedup_text(r),
            str(r.new_timing.n) if r.new_timing else "-",
            _precision_text(r),
            _sol_text(r),
            fmt_bytes(peak_memory(r)),
        )
    return table


def _many_problems(records: Sequence[EvalRecord]) -> bool:
    return len({r.problem for r in records}) > 1


def peak_memory(r: EvalRecord) -> int | None:
    """The larger of both models' peak device memory in bytes, when it was measured."""
    peaks = [r.memory[k] for k in ("reference", "candidate") if isinstance(r.memory.get(k), (int, float))]
    return max(peaks) if peaks else None


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    if n >= 2**30:
        return f"{n / 2**30:.2f} GiB"
    return f"{n / 2**20:.1f} MiB"


def _precision_text(r: EvalRecord) -> str:
    """The tier met, and the error against float64 as a multiple of the reference's own."""
    if not r.precision_tier:
        return "-"
    multiple = r.floor_multiple
    if multiple is None or multiple == float("inf"):
        return r.precision_tier
    return f"{r.precision_tier}, {multiple:.2g}× floor"


def _sol_text(r: EvalRecord) -> str:
    """Both models' fraction of the hardware floor, and what bounds the problem."""
    new, ref = r.sol("new"), r.sol("ref")
    if ref is None:
        return "-"
    bound = r.roofline.get("bound", "")
    if new is None or not r.correct:
        return f"{100 * ref:.0f}% ({bound})"
    return f"{100 * ref:.0f}% → {100 * new:.0f}% ({bound})"


def notes(records: Sequence[EvalRecord]) -> list[str]:
    """What a reader must know beside the table: flags, notes, why a candidate failed, and noisy timings."""
    lines = []
    many = _many_problems(records)
    for r in records:
        name = f"{r.problem} {Path(r.solution_path).name}" if many else Path(r.solution_path).name
        lines.extend(f"{name}: flagged: {flag}" for flag in r.flags)
        lines.extend(f"{name}: note: {note}" for note in r.notes)
        if not r.correct:
            said = r.message if r.message.startswith(r.verdict.value) else f"{r.verdict.value}: {r.message}"
            lines.append(f"{name}: {said}")
            continue
        for label, t in (("reference", r.ref_timing), ("candidate", r.new_timing)):
            if t is not None and relative_spread(t.times_ms) > NOISY_SPREAD:
                lines.append(f"{name}: {label} timing is noisy (IQR {100 * relative_spread(t.times_ms):.0f}% of the "
                             "median); close other programs or raise --runs / --time-budget")
        target = r.settings.get("target_ci", 0)
        unsettled = [(label, t) for label, t in (("reference", r.ref_timing), ("candidate", r.new_timing))
                     if target and t is not None and t.n > 1 and t.ci_rel > target]
        for label, t in unsettled:
            lines.append(f"{name}: {label} median known to ±{100 * t.ci_rel:.1f}% after {t.n} runs, not the "
                         f"±{100 * target:g}% asked; raise --time-budget")
        if r.compiled_timing is not None:
            lines.append(f"{name}: {r.speedup_over('eager'):.2f}× over eager PyTorch, {r.speedup_over('compile'):.2f}× "
                         f"over torch.compile (the speedup shown is against {r.baseline_used})")
        if r.speedup is not None:
            lo, hi = speedup_ci(r.ref_timing.times_ms, r.new_timing.times_ms)
            word = "faster" if r.speedup >= 1 else "slower"
            factor = r.speedup if r.speedup >= 1 else 1 / r.speedup
            half = (hi - lo) / 2 if r.speedup >= 1 else (1 / lo - 1 / hi) / 2
            lines.append(f"{name} ran {factor:.2f} ± {half:.2f} times {word} than the reference")
    return lines


def leaderboard_table(board: pd.DataFrame, fast: dict[float, float], geomean: float) -> Table:
    """The board; a settings column when some row was measured with other than the default settings."""
    caption = "  ".join(f"fast_{p:g}={v:.2f}" for p, v in fast.items()) + f"  geomean speedup={geomean:.2f}×"
    table = Table(title="leaderboard", caption=caption)
    with_settings = bool((board["measured"].fillna("") != "").any())
    columns = ("problem", *(("settings",) if with_settings else ()), "best solution", "speedup", "reference",
               "candidate", "SOL", "correct/evaluated")
    for col in columns:
        table.add_column(col, justify="left" if col in ("problem", "settings", "best solution") else "right")
    for row in board.itertuples():
        table.add_row(
            row.problem,
            *((row.measured or "-",) if with_settings else ()),
            Path(row.solution).name if isinstance(row.solution, str) else "-",
            f"{row.speedup:.2f}×" if pd.notna(row.speedup) else "-",
            fmt_ms(row.ref_median_ms) if pd.notna(row.ref_median_ms) else "-",
            fmt_ms(row.new_median_ms) if pd.notna(row.new_median_ms) else "-",
            f"{100 * row.sol:.0f}% ({row.bound})" if pd.notna(row.sol) else "-",
            f"{row.correct}/{row.candidates}",
        )
    return table


def left_out_lines(apart: pd.DataFrame, prefix: str = "left out: ") -> list[str]:
    """``left out: 1/7 zeros.py: problem cannot discriminate: ...``, one per record kept off the board."""
    return [f"{prefix}{r.problem}{f' ({r.measured})' if r.measured else ''} {Path(r.solution).name}: {r.reason}"
            for r in apart.itertuples()]


def baseline_table(baselines) -> Table:
    gpu = next((b.env.get("gpu") or b.env.get("device") for b in baselines if b.env), "")
    table = Table(title=f"reference times on {gpu}")
    for col in ("problem", "name", "median", "min", "max", "runs"):
        table.add_column(col, justify="left" if col in ("problem", "name") else "right")
    for b in baselines:
        if not b.times_ms:
            table.add_row(b.problem, b.name, Text(b.error, style="red"), "", "", "")
            continue
        table.add_row(b.problem, b.name, fmt_ms(b.median_ms), fmt_ms(min(b.times_ms)), fmt_ms(max(b.times_ms)),
                      str(len(b.times_ms)))
    return table


def roofline_table(rows, ceilings) -> Table:
    """Per problem: work, least bytes, intensity, floor and bound; reference's SOL when its time is known."""
    caption = (f"{ceilings.device_name} ({ceilings.source}): {ceilings.bandwidth_gbs:.0f} GB/s, fp32 "
               f"{ceilings.fp32_tflops:.1f}, tf32 {ceilings.tf32_tflops:.1f}, fp16 {ceilings.fp16_tflops:.1f}, "
               f"bf16 {ceilings.bf16_tflops:.1f} TFLOP/s")
    table = Table(title="speed of light", caption=caption)
    for col in ("problem", "name", "GFLOP", "MB", "flop/B", "floor", "bound", "reference", "reference SOL"):
        table.add_column(col, justify="left" if col in ("problem", "name", "bound") else "right")
    for p, work, fl, ref_ms in rows:
        table.add_row(p.key, p.name, f"{work.flops / 1e9:.3g}", f"{work.bytes / 1e6:.4g}", f"{work.intensity:.3g}",
                      fmt_ms(fl.floor_ms), fl.bound, fmt_ms(ref_ms), f"{100 * fl.floor_ms / ref_ms:.0f}%" if ref_ms else "-")
    return table
