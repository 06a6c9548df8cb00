"""Reports from the store: CSV columns, JSON records, Markdown sections with the figures."""
import json

import pandas as pd

from kbharness import leaderboard as lb
from kbharness.report import markdown, write_csv, write_json
from kbharness.results import EvalRecord, Timing, Verdict
from test_cli import invoke


def _rec(problem, name, verdict, ref=None, new=None, build_s=None, flags=(), t="2026-01-01T00:00:00", settings=None):
    return EvalRecord(problem=problem, problem_path=f"{problem}.py", solution_path=f"s/{name}", solution_sha256=name,
                      verdict=verdict, ref_timing=Timing((ref,)) if ref else None,
                      new_timing=Timing((new,)) if new else None, build_s=build_s, flags=tuple(flags),
                      env={"device": "cuda", "gpu": "NVIDIA H100"}, settings=settings or {},
                      settings_key=str(settings), timestamp_utc=t)


RECORDS = [
    _rec("1/1", "a.py", Verdict.CORRECT, 3.0, 1.0, build_s=40.0),
    _rec("1/1", "b.py", Verdict.INCORRECT, build_s=70.0),
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


def _browser() -> str | None:
    import shutil

    return next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def test_html_report_opens_in_a_headless_browser_with_every_plot(tmp_path):
    import subprocess

    import pytest

    browser = _browser()
    if browser is None:
        pytest.skip("no headless browser (apt-get install chromium; .ci/run does)")
    store = tmp_path / "s.jsonl"
    store.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in RECORDS))
    r = invoke("report", "--store", store, "--out", tmp_path / "rep", "--html")
    assert r.exit_code == 0, r.output
    page = tmp_path / "rep" / "report.html"
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert 'data-images-loaded="3"' in dom
    for caption in ("Speedup per level", "fast_p", "Verdicts"):
        assert f"<figcaption>{caption}</figcaption>" in dom
    assert "<td>1/1</td>" in dom and "a.py" in dom
