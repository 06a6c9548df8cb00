import math

import pandas as pd
import pytest

from kbharness import leaderboard as lb
from kbharness.results import Verdict
from test_store import make


@pytest.fixture
def frame():
    return lb.records_frame([
        make(problem="2/71", sha="a" * 64, ref=(4.0,), new=(2.0,)),     # 2.0x
        make(problem="2/71", sha="b" * 64, ref=(4.0,), new=(1.0,)),     # 4.0x, best
        make(problem="2/63", sha="c" * 64, ref=(3.0,), new=(2.0,)),     # 1.5x
        make(problem="2/54", sha="d" * 64, verdict=Verdict.INCORRECT, ref=None, new=None),
        make(problem="2/97", sha="e" * 64, ref=(1.0,), new=(2.0,)),     # 0.5x
    ])


def test_leaderboard_keeps_best_correct_per_problem(frame):
    board = lb.leaderboard(frame).set_index("problem")
    assert board.loc["2/71", "speedup"] == 4.0
    assert board.loc["2/71", "candidates"] == 2 and board.loc["2/71", "correct"] == 2
    assert pd.isna(board.loc["2/54", "solution"]) and board.loc["2/54", "correct"] == 0


def test_fast_p_and_geomean_by_hand(frame):
    board = lb.leaderboard(frame)
    assert lb.fast_p(board) == {0.0: 0.75, 1.0: 0.5, 1.5: 0.25, 2.0: 0.25}
    assert lb.geomean_speedup(board) == pytest.approx(math.exp((math.log(4) + math.log(1.5) + math.log(0.5)) / 3))


def test_newer_record_of_the_same_candidate_replaces_older():
    frame = lb.records_frame([
        make(problem="1/1", sha="a" * 64, ref=(4.0,), new=(1.0,), ts="2026-11-23T10:00:00+00:00"),
        make(problem="1/1", sha="a" * 64, ref=(4.0,), new=(2.0,), ts="2026-11-23T11:00:00+00:00"),
    ])
    assert lb.leaderboard(frame)["speedup"].tolist() == [2.0]


def test_incorrect_candidates_have_no_speedup_column_value(frame):
    assert pd.isna(frame.set_index("problem").loc["2/54", "speedup"])
    assert list(frame.columns) == lb.COLUMNS
