"""Rendered tables and notes: the columns a reader needs to tell rows apart."""
from rich.console import Console

from kbharness.reporting import leaderboard as lb
from kbharness.reporting import render
from kbharness.common.results import Verdict
from test_store import make


def _text(table) -> str:
    console = Console(width=300, record=True, file=open("/dev/null", "w"))
    console.print(table)
    return console.export_text()


def _needs_cuda(problem, sha):
    return make(problem=problem, sha=sha, verdict=Verdict.NEEDS_CUDA, ref=None, new=None, message="no GPU visible")


def test_a_table_of_several_problems_has_a_problem_column_and_notes_name_the_problem():
    records = [_needs_cuda("2/71", "a" * 64), _needs_cuda("2/63", "b" * 64)]
    text = _text(render.results_table(records))
    assert "problem" in text.splitlines()[1]
    assert any(line.startswith("│ 2/71") for line in text.splitlines())
    assert render.notes(records) == ["2/71 aaaa.py: needs CUDA: no GPU visible",
                                     "2/63 bbbb.py: needs CUDA: no GPU visible"]
    single = _text(render.results_table(records[:1]))
    assert "problem" not in single.splitlines()[1]


def test_peak_memory_column_and_notes_lines():
    big = make(memory={"reference": 3 * 2**30, "candidate": 2**30, "limit": 80 * 2**30},
               notes=("float64 run skipped: too large",))
    small = make(sha="b" * 64, memory={"reference": 5 * 2**20})
    none = make(sha="c" * 64)
    assert [render.fmt_bytes(render.peak_memory(r)) for r in (big, small, none)] == ["3.00 GiB", "5.0 MiB", "-"]
    text = _text(render.results_table([big]))
    assert "peak mem" in text and "3.00 GiB" in text
    assert "aaaa.py: note: float64 run skipped: too large" in render.notes([big])


def test_leaderboard_shows_settings_only_when_some_row_has_them_and_lists_left_out_records():
    plain = lb.records_frame([make(problem="2/71")])
    assert "settings" not in _text(render.leaderboard_table(lb.leaderboard(plain), {}, 1.0))
    sized = lb.records_frame([
        make(problem="2/71", settings={"size_overrides": {"batch_size": 16}}),
        make(problem="2/71", sha="b" * 64, settings_key="k2"),
        make(problem="1/7", sha="c" * 64, flags=("problem cannot discriminate: an all-zeros output passes the check",)),
    ])
    text = _text(render.leaderboard_table(lb.leaderboard(sized), {}, 1.0))
    assert "settings" in text and "batch_size=16" in text and "1/7" not in text
    assert render.left_out_lines(lb.left_out(sized)) == [
        "left out: 1/7 cccc.py: problem cannot discriminate: an all-zeros output passes the check"]


def test_a_failure_note_does_not_say_its_verdict_twice():
    record = make(problem="2/71", sha="c" * 64, verdict=Verdict.NEEDS_CUDA, ref=None, new=None,
                  message="needs CUDA; no GPU visible")
    assert render.notes([record]) == ["cccc.py: needs CUDA; no GPU visible"]
