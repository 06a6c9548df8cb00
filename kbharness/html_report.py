"""The HTML report: the Markdown summary's figures as plots people would rather look at
than read (speedup distribution per level, fast_p curve, verdict breakdown), in one
self-contained page (images inlined), drawn with matplotlib."""
from __future__ import annotations

import base64
import html
import io
import math
from typing import Sequence

import matplotlib
import pandas as pd

from kbharness import leaderboard as lb
from kbharness.results import EvalRecord

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the headless backend)

P_GRID = [i / 20 for i in range(0, 61)]


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def figures(frame: pd.DataFrame, board: pd.DataFrame) -> dict[str, str]:
    """Title -> base64 PNG."""
    out = {}
    levels = sorted(board["level"].unique())
    fig, ax = plt.subplots(figsize=(6, 3.2))
    correct = frame[(frame["verdict"] == "correct") & frame["speedup"].notna()].copy()
    correct["level"] = lb.level(correct)
    data = [correct.loc[correct["level"] == lv, "speedup"].tolist() for lv in levels]
    for k, (lv, values) in enumerate(zip(levels, data)):
        ax.scatter(values, [k] * len(values), alpha=0.6, s=28)
    ax.set_xscale("log")
    ax.axvline(1.0, color="grey", lw=1, ls="--")
    ax.set_yticks(range(len(levels)), [f"level {lv}" for lv in levels])
    ax.set_xlabel("speedup over the reference (correct candidates, log scale)")
    out["Speedup per level"] = _png(fig)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.2))
    for label, part in [("all", board)] + [(f"level {lv}", board[board["level"] == lv]) for lv in levels]:
        fast = lb.fast_p(part, P_GRID)
        ax.plot(P_GRID, [fast[p] for p in P_GRID], label=label)
    ax.set_xlabel("p (speedup threshold)")
    ax.set_ylabel("fast_p")
    ax.set_ylim(-0.02, 1.02)
    ax.legend()
    out["fast_p"] = _png(fig)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.2))
    counts = frame["verdict"].value_counts().sort_values()
    ax.barh(counts.index.tolist(), counts.values.tolist(), color="tab:blue")
    ax.set_xlabel("evaluations")
    out["Verdicts"] = _png(fig)
    plt.close(fig)
    return out


def render(records: Sequence[EvalRecord], source: str = "") -> str:
    frame = lb.latest(lb.records_frame(records))
    board = lb.leaderboard(frame)
    board["level"] = lb.level(board)
    geo = lb.geomean_speedup(board)
    figs = figures(frame, board)
    table = board.drop(columns=["level"]).to_html(index=False, na_rep="-", float_format=lambda x: f"{x:.3g}")
    summary = (f"{len(frame)} evaluations of {frame['problem'].nunique()} problems"
               f"{', from ' + html.escape(source) if source else ''}; geometric-mean speedup "
               f"{'-' if math.isnan(geo) else f'{geo:.2f}×'}.")
    images = "\n".join(f'<figure><img alt="{html.escape(t)}" src="data:image/png;base64,{b64}">'
                       f"<figcaption>{html.escape(t)}</figcaption></figure>" for t, b64 in figs.items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kbharness report</title>
<style>body{{font-family:sans-serif;max-width:960px;margin:2em auto}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px}} figure{{display:inline-block;margin:0.5em}}</style></head>
<body data-images-loaded="0">
<h1>kbharness report</h1>
<p>{summary}</p>
{images}
<h2>Leaderboard</h2>
{table}
<script>
window.addEventListener("load", () => {{
  const ok = [...document.images].filter(i => i.complete && i.naturalWidth > 0).length;
  document.body.dataset.imagesLoaded = String(ok);
}});
</script>
</body></html>
"""
