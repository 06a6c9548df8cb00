"""Reports from the store: CSV columns, JSON records, Markdown sections with the figures."""
import json
from dataclasses import replace
from pathlib import Path

import pandas as pd

from kbharness.reporting import leaderboard as lb
from kbharness.reporting.report import markdown, write_csv, write_json
from kbharness.common.results import EvalRecord, Timing, Verdict
from test_cli import invoke


def _rec(problem, name, verdict, ref=None, new=None, build_s=None, flags=(), t="2026-01-01T00:00:00", settings=None):
    return EvalRecord(problem=problem, problem_path=f"{problem}.py", solution_path=f"s/{name}", solution_sha256=name,
                      verdict=verdict, ref_timing=Timing((ref,)) if ref else None,
                      new_timing=Timing((new,)) if new else None, build_s=build_s, flags=tuple(flags),
                      env={"device": "cuda", "gpu": "NVIDIA H100"}, settings=settings or {},
                      settings_key=str(settings), timestamp_utc=t)


RECORDS = [
    _rec("1/1", "a.py", Verdict.CORRECT, 3.0, 1.0, build_s=40.0),
    _rec("1/1", "b.py", Verdict.INCORRECT, 3.0, 0.5, build_s=70.0),  # timed, then failed a timed-call check
    _rec("1/2", "c.py", Verdict.CORRECT, 1.0, 0.8, build_s=20.0, flags=["no custom kernel: only library kernels"]),
    _rec("2/5", "d.py", Verdict.COMPILE_ERROR),
]


def test_csv_and_json_keep_every_evaluation(tmp_path):
    write_csv(RECORDS, tmp_path / "r.csv")
    frame = pd.read_csv(tmp_path / "r.csv")
    assert list(frame.columns) == lb.COLUMNS and len(frame) == 4
    assert frame.loc[0, "speedup"] == 3.0 and pd.isna(frame.loc[1, "speedup"])
    write_json(RECORDS, tmp_path / "r.json")
    docs = json.loads((tmp_path / "r.json").read_text())
    assert [EvalRecord.from_dict(d).verdict for d in docs] == [r.verdict for r in RECORDS]


def test_markdown_has_leaderboards_per_level_fast_p_verdicts_compiles_and_flags():
    md = markdown(RECORDS, "results/evals.jsonl")
    assert "4 evaluations of 3 problems on NVIDIA H100, from results/evals.jsonl" in md
    assert "| correct | 2 |" in md and "| compile error | 1 |" in md
    assert "## Leaderboard, level 1" in md and "## Leaderboard, level 2" in md
    assert "| 1/1 | a.py | 3.00× | 3.000 ms | 1.000 ms | - | 1/2 |" in md
    # level 1: both problems correct, one beyond 1.5x; level 2: none correct
    assert "| level 1 | 2 | 1.00 | 1.00 | 1.00 | 0.50 | 0.50 |" in md
    assert "| level 2 | 1 | 0.00 | 0.00 | 0.00 | 0.00 | 0.00 | - |" in md
    assert "| all | 3 | 0.67 | 0.67 | 0.67 | 0.33 | 0.33 |" in md
    slowest = md.split("## Slowest compiles")[1]
    assert slowest.index("b.py") < slowest.index("a.py") < slowest.index("c.py")
    assert "- 1/2 c.py: no custom kernel" in md


def test_markdown_separates_settings_leaves_out_untrusted_records_and_names_scratch_problems():
    records = [
        _rec("2/71", "a.py", Verdict.CORRECT, 2.22, 1.0, settings={"size_overrides": {"batch_size": 16}}),
        _rec("2/71", "a.py", Verdict.CORRECT, 1.25, 1.0, settings={"size_overrides": {"batch_size": 4}}),
        _rec("1/7", "zeros.py", Verdict.CORRECT, 9.0, 1.0,
             flags=["problem cannot discriminate: an all-zeros output passes the check"]),
        _rec("x_scale-3fa9c2d1", "x.py", Verdict.CORRECT, 2.0, 1.0),
    ]
    md = markdown(records)
    assert "| problem | settings | best solution |" in md
    assert "| 2/71 | batch_size=16 | a.py | 2.22× |" in md and "| 2/71 | batch_size=4 | a.py | 1.25× |" in md
    assert "## Leaderboard, problems outside a levelN tree" in md and "| x_scale-3fa9c2d1 | - | x.py | 2.00× |" in md
    assert "## Leaderboard, level 1" not in md
    assert "| all | 3 | 1.00 | 1.00 | 1.00 | 0.67 | 0.33 |" in md  # 2.22, 1.25, 2.0 and not 9.0
    assert "## Left out" in md and "- 1/7 zeros.py: problem cannot discriminate: an all-zeros output passes" in md


def test_kb_report_writes_three_files(tmp_path):
    store = tmp_path / "s.jsonl"
    store.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in RECORDS))
    r = invoke("report", "--store", store, "--out", tmp_path / "rep")
    assert r.exit_code == 0, r.output
    assert {p.name for p in (tmp_path / "rep").iterdir()} == {"report.csv", "report.json", "report.md"}
    assert "## fast_p" in (tmp_path / "rep" / "report.md").read_text()
    assert invoke("report", "--store", tmp_path / "none.jsonl").exit_code == 2


def _html_records(tmp_path):
    """RECORDS plus what a real store holds: an absolute path under the working directory, a
    build loaded from the cache (0.1 s), a long flag, a third level."""
    long = tmp_path / "solutions" / "level2" / "71_Conv2d_Divide_LeakyReLU" / ("sample_" + "x" * 120 + ".py")
    return RECORDS + [
        replace(_rec("2/71", "e.py", Verdict.CORRECT, 2.0, 1.0, build_s=0.1), solution_path=str(long)),
        _rec("3/1", "f.py", Verdict.CORRECT, 5.0, 1.0, build_s=45.0,
             flags=["implausible speedup: " + "kernel_" * 40]),
    ]


def test_html_figures_label_every_dot_and_keep_one_colour_per_level(tmp_path):
    from matplotlib.colors import to_hex

    from kbharness.reporting import html_report

    frame, board = html_report.frames(_html_records(tmp_path))
    figs = html_report.figures(frame, board)
    dots = figs["Speedup per level"].axes[0]
    assert sorted(t.get_text() for t in dots.texts) == ["1/1", "1/2", "2/71", "3/1"]
    lines = {line.get_label(): to_hex(line.get_color()) for line in figs["fast_p"].axes[0].lines}
    bars = {c.get_label(): to_hex(c.patches[0].get_facecolor()) for c in figs["Verdicts per level"].axes[0].containers}
    for k, level in enumerate(["1", "2", "3"]):
        colour = to_hex(dots.collections[k].get_facecolor()[0])
        assert lines[f"level {level}"] == bars[f"level {level}"] == colour
    assert len({lines["level 1"], lines["level 2"], lines["level 3"]}) == 3


PROBE = """<script>window.addEventListener("load", () => {
  const plots = [...document.querySelectorAll("figure svg")].filter(s => s.getBoundingClientRect().width > 0);
  document.body.insertAdjacentHTML("beforeend",
    `<pre id="probe">width=${document.documentElement.scrollWidth} plots=${plots.length}</pre>`);
});</script>"""


def _open_in_chromium(page: Path) -> tuple[str, int, int]:
    """The page's DOM after load in a 1400 px window, its scroll width and how many plots have a size."""
    import re
    import shutil
    import subprocess

    import pytest

    if shutil.which("chromium") is None:
        pytest.skip("no chromium (apt-get install chromium; .ci/run does)")
    probed = page.with_name("probed.html")
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = subprocess.run(["chromium", "--headless", "--disable-gpu", "--no-sandbox", "--window-size=1400,900",
                          "--virtual-time-budget=5000", "--dump-dom", probed.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<pre id="probe">width=(\d+) plots=(\d+)</pre>', dom)
    assert m, dom[-2000:]
    return dom, int(m.group(1)), int(m.group(2))


def test_html_report_fits_a_1400px_window_with_every_plot_table_and_flag(tmp_path, monkeypatch):
    wide = tmp_path / "wide.html"
    wide.write_text('<!doctype html><html><body><div style="width:3000px">x</div></body></html>')
    assert _open_in_chromium(wide)[1] > 1400  # the probe does see a page that runs past the window
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "s.jsonl"
    store.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in _html_records(tmp_path)))
    r = invoke("report", "--store", store, "--out", tmp_path / "rep", "--html")
    assert r.exit_code == 0, r.output
    dom, width, plots = _open_in_chromium(tmp_path / "rep" / "report.html")
    assert width <= 1400 and plots == 3
    for caption in ("Speedup per level", "fast_p", "Verdicts per level"):
        assert f"<figcaption>{caption}</figcaption>" in dom
    assert ">2/71</text>" in dom  # the dots' labels are text in the plot
    assert "<th>best solution</th>" in dom and "<th>correct / evaluated</th>" in dom and "new_median_ms" not in dom
    assert "solutions/level2/71_Conv2d_Divide_LeakyReLU/sample_" in dom and str(tmp_path) not in dom
    assert "<td>level 1</td><td class=\"num\">2</td>" in dom and "<th>fast_0.5</th>" in dom  # per-level fast_p
    assert "no custom kernel: only library kernels" in dom and "implausible speedup: kernel_" in dom
    compiles = dom.split("<h2>Slowest compiles</h2>")[1]
    assert "1 evaluation took under a second to build" in compiles
    assert compiles.index("70.0 s") < compiles.index("45.0 s") < compiles.index("40.0 s") and "0.1 s" not in compiles
