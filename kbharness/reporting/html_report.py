"""The HTML report: the Markdown summary's tables and figures on one self-contained page
that fits a 1400 px window, with plots people would rather look at than read (speedup of
every correct candidate per level, labelled with its problem; fast_p curves; verdicts per
level), drawn with matplotlib as inline SVG so their labels stay text.

Each level keeps one colour in every plot and beside its leaderboard; paths are shown
relative to the working directory (records hold absolute ones)."""
from __future__ import annotations

import html
import io
import math
import os
from typing import Sequence

import matplotlib
import matplotlib.ticker
import pandas as pd

from kbharness.reporting import leaderboard as lb
from kbharness.reporting.render import fmt_ms
from kbharness.reporting.report import REPORT_FAST_P, real_builds
from kbharness.common.results import EvalRecord

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the headless backend)

P_GRID = [i / 20 for i in range(0, 61)]
PALETTE = plt.get_cmap("tab10").colors
STYLE = """
body{font-family:sans-serif;max-width:1360px;margin:1em auto;padding:0 1em;box-sizing:border-box}
table{border-collapse:collapse;margin:0.5em 0;max-width:100%}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;white-space:nowrap}
td.num{text-align:right}
td.long{white-space:normal;overflow-wrap:anywhere}
.plots{display:flex;flex-wrap:wrap;gap:1em}
figure{margin:0;flex:0 1 640px;max-width:100%}
figure svg{width:100%;height:auto}
.swatch{display:inline-block;width:0.8em;height:0.8em;margin-right:0.4em;border-radius:2px}
.note{color:#555}
"""


def level_order(levels) -> list[str]:
    """Numeric levels first, in order, then any others (problems outside a levelN tree)."""
    return sorted(set(levels), key=lambda v: (not str(v).isdigit(), int(v) if str(v).isdigit() else 0, str(v)))


def level_label(level: str) -> str:
    return f"level {level}" if str(level).isdigit() else "other problems"


def level_colours(levels) -> dict[str, tuple]:
    """One colour per level, the same in every plot and table of the page."""
    return {lv: PALETTE[k % len(PALETTE)] for k, lv in enumerate(level_order(levels))}


def relative(path) -> str:
    if not isinstance(path, str) or not path:
        return "-"
    return os.path.relpath(path) if os.path.isabs(path) else path


def _speedup_figure(correct: pd.DataFrame, colours: dict) -> plt.Figure:
    levels = list(colours)
    fig, ax = plt.subplots(figsize=(6.4, max(2.4, 0.8 * len(levels) + 1.2)))
    for k, lv in enumerate(levels):
        part = correct[correct["level"] == lv]
        ax.scatter(part["speedup"], [k] * len(part), color=colours[lv], alpha=0.7, s=28)
        for j, (key, x) in enumerate(zip(part["problem"], part["speedup"])):
            ax.annotate(str(key), (x, k), xytext=(4, 5 if j % 2 == 0 else -11), textcoords="offset points",
                        fontsize=7, color=colours[lv])
    ax.set_xscale("log")
    times = matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}×")
    ax.xaxis.set_major_formatter(times)
    ax.xaxis.set_minor_formatter(times)
    ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.axvline(1.0, color="grey", lw=1, ls="--")
    ax.set_yticks(range(len(levels)), [level_label(lv) for lv in levels])
    ax.set_ylim(-0.7, len(levels) - 0.3)
    ax.margins(x=0.15)
    ax.set_xlabel("speedup over the reference (correct candidates, log scale)")
    return fig


def _fast_p_figure(board: pd.DataFrame, colours: dict) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    fast = lb.fast_p(board, P_GRID)
    ax.plot(P_GRID, [fast[p] for p in P_GRID], label="all", color="black", ls="--")
    for lv, colour in colours.items():
        part = board[board["level"] == lv]
        if not part.empty:
            fast = lb.fast_p(part, P_GRID)
            ax.plot(P_GRID, [fast[p] for p in P_GRID], label=level_label(lv), color=colour)
    ax.set_xlabel("p (speedup threshold)")
    ax.set_ylabel("fast_p")
    ax.set_ylim(-0.02, 1.02)
    ax.legend()
    return fig


def _verdict_figure(frame: pd.DataFrame, colours: dict) -> plt.Figure:
    counts = frame.groupby(["verdict", "level"]).size().unstack(fill_value=0)
    counts = counts.loc[counts.sum(axis=1).sort_values().index]
    fig, ax = plt.subplots(figsize=(6.4, max(2.4, 0.35 * len(counts) + 1.2)))
    left = [0] * len(counts)
    for lv, colour in colours.items():
        if lv in counts:
            values = counts[lv].tolist()
            ax.barh(counts.index.tolist(), values, left=left, color=colour, label=level_label(lv))
            left = [a + b for a, b in zip(left, values)]
    ax.set_xlabel("evaluations")
    ax.legend()
    return fig


def figures(frame: pd.DataFrame, board: pd.DataFrame) -> dict[str, plt.Figure]:
    """Title -> figure; ``frame`` and ``board`` carry a ``level`` column."""
    colours = level_colours(frame["level"])
    correct = frame[(frame["verdict"] == "correct") & frame["speedup"].notna()]
    return {"Speedup per level": _speedup_figure(correct, colours),
            "fast_p": _fast_p_figure(board, colours),
            "Verdicts per level": _verdict_figure(frame, colours)}


def _svg(fig: plt.Figure) -> str:
    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


LONG_COLUMNS = ("best solution", "solution", "flags")


def _table(header: Sequence[str], rows: Sequence[Sequence], numeric: Sequence[str] = ()) -> str:
    """Numbers right-aligned; paths and flags wrap anywhere (so the page keeps its width), the rest never."""
    kind = {h: " class=num" if h in numeric else " class=long" if h in LONG_COLUMNS else "" for h in header}
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td{kind[h]}>{html.escape(_text(v))}</td>" for h, v in zip(header, row))
                   + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return str(value)


def _swatch(colour) -> str:
    return f'<span class="swatch" style="background:{matplotlib.colors.to_hex(colour)}"></span>'


def _leaderboards(board: pd.DataFrame, colours: dict) -> list[str]:
    with_settings = bool((board["measured"].fillna("") != "").any())
    header = ["problem", *(["settings"] if with_settings else []), "best solution", "speedup", "reference",
              "candidate", "SOL", "correct / evaluated"]
    out = []
    for lv, colour in colours.items():
        part = board[board["level"] == lv]
        if part.empty:
            continue
        rows = [(r.problem, *([r.measured or None] if with_settings else []), relative(r.solution),
                 f"{r.speedup:.2f}×" if pd.notna(r.speedup) else None, fmt_ms(r.ref_median_ms),
                 fmt_ms(r.new_median_ms), f"{100 * r.sol:.0f}% ({r.bound})" if pd.notna(r.sol) else None,
                 f"{r.correct}/{r.candidates}") for r in part.itertuples()]
        out += [f"<h3>{_swatch(colour)}{html.escape(level_label(lv))}</h3>",
                _table(header, rows, numeric=("speedup", "reference", "candidate", "SOL", "correct / evaluated"))]
    return out


def _fast_p_table(board: pd.DataFrame, colours: dict) -> str:
    rows = []
    for label, part in [(level_label(lv), board[board["level"] == lv]) for lv in colours] + [("all", board)]:
        if part.empty:
            continue
        fast = lb.fast_p(part, REPORT_FAST_P)
        geo = lb.geomean_speedup(part)
        rows.append((label, len(part), *(f"{fast[p]:.2f}" for p in REPORT_FAST_P),
                     None if math.isnan(geo) else f"{geo:.2f}×"))
    header = ["", "problems", *(f"fast_{p:g}" for p in REPORT_FAST_P), "geomean"]
    return _table(header, rows, numeric=header[1:])


def _flags(frame: pd.DataFrame) -> list[str]:
    flagged = frame[frame["flags"].fillna("") != ""]
    if flagged.empty:
        return ["<p>No evaluation was flagged.</p>"]
    rows = [(r.problem, relative(r.solution), r.verdict, r.flags,
             "left out: its speedup cannot be trusted" if r.untrusted else "kept") for r in flagged.itertuples()]
    return [_table(["problem", "solution", "verdict", "flags", "leaderboard"], rows)]


def _compiles(frame: pd.DataFrame) -> list[str]:
    builds, loads = real_builds(frame)
    note = (f'<p class="note">{loads} evaluation{"s" if loads != 1 else ""} took under a second to build: '
            "a load from the build cache or nothing to compile, not shown.</p>" if loads else "")
    if builds.empty:
        return [note or "<p>No build times recorded.</p>"]
    rows = [(r.problem, relative(r.solution), f"{r.build_s:.1f} s") for r in builds.itertuples()]
    return [note, _table(["problem", "solution", "build"], rows, numeric=("build",))]


def frames(records: Sequence[EvalRecord]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The newest evaluations and the leaderboard, each with a ``level`` column."""
    frame = lb.latest(lb.records_frame(records))
    frame["level"] = lb.level(frame)
    board = lb.leaderboard(frame)
    board["level"] = lb.level(board)
    return frame, board


def render(records: Sequence[EvalRecord], source: str = "") -> str:
    frame, board = frames(records)
    colours = level_colours(frame["level"])
    geo = lb.geomean_speedup(board)
    gpus = sorted({str(g) for g in frame["gpu"].dropna()}) or sorted({str(d) for d in frame["device"].dropna()})
    summary = (f"{len(frame)} evaluations of {frame['problem'].nunique()} problems on {', '.join(gpus) or '-'}"
               f"{', from ' + relative(source) if source else ''}; geometric-mean speedup of the best candidates "
               f"{'-' if math.isnan(geo) else f'{geo:.2f}×'}.")
    plots = "\n".join(f"<figure>{_svg(fig)}<figcaption>{html.escape(title)}</figcaption></figure>"
                      for title, fig in figures(frame, board).items())
    sections = [
        "<h2>fast_p and geometric-mean speedup</h2>",
        "<p>fast_p: the fraction of problems whose best candidate is correct and more than p times faster.</p>",
        _fast_p_table(board, colours),
        "<h2>Leaderboard</h2>", *_leaderboards(board, colours),
        "<h2>Flags</h2>", *_flags(frame),
        "<h2>Slowest compiles</h2>", *_compiles(frame),
    ]
    body = "\n".join(sections)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kbharness report</title>
<style>{STYLE}</style></head>
<body>
<h1>kbharness report</h1>
<p>{html.escape(summary)}</p>
<div class="plots">
{plots}
</div>
{body}
</body></html>
"""
