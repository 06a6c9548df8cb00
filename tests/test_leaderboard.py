import math

import pandas as pd
import pytest

from kbharness.reporting import leaderboard as lb
from kbharness.common.results import Verdict
from test_store import make


@pytest.fixture
def frame():
    return lb.records_frame([
        make(problem="2/71", sha="a" * 64, ref=(4.0,), new=(2.0,)),     # 2.0x
        make(problem="2/71", sha="b" * 64, ref=(4.0,), new=(1.0,)),     # 4.0x, best
        make(problem="2/63", sha="c" * 64, ref=(3.0,), new=(2.0,)),     # 1.5x
        # Timed, then failed a check of the timed calls: its times are kept, its speedup is not.
        make(problem="2/54", sha="d" * 64, verdict=Verdict.INCORRECT, ref=(4.0,), new=(1.0,)),
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
    assert pd.isna(frame.set_index("problem").loc["2/54", "sol"])
    assert list(frame.columns) == lb.COLUMNS


def test_two_sizes_of_one_problem_are_two_rows_with_their_settings():
    small = {"size_overrides": {"batch_size": 4}, "precision": "fp32", "atol": None, "rtol": None}
    large = {"size_overrides": {"batch_size": 16}, "precision": "fp32", "atol": None, "rtol": None}
    frame = lb.records_frame([
        make(problem="2/71", sha="a" * 64, ref=(2.5,), new=(2.0,), settings=large),
        make(problem="2/71", sha="a" * 64, ref=(4.44,), new=(2.0,), settings=small, settings_key="k2"),
    ])
    board = lb.leaderboard(frame)
    assert board[["measured", "speedup"]].values.tolist() == [["batch_size=16", 1.25], ["batch_size=4", 2.22]]
    assert lb.fast_p(board) == {0.0: 1.0, 1.0: 1.0, 1.5: 0.5, 2.0: 0.5}


def test_records_of_two_gpu_models_are_two_rows_named_by_gpu():
    def on(gpu, new):
        return make(problem="1/34", sha="a" * 64, ref=(4.0,), new=(new,), env={"device": "cuda", "gpu": gpu})

    one_gpu = lb.leaderboard(lb.records_frame([on("NVIDIA H200", 2.0)]))
    assert one_gpu["measured"].tolist() == [""]
    board = lb.leaderboard(lb.records_frame([on("NVIDIA H100 80GB HBM3", 2.0), on("NVIDIA H200", 1.0)]))
    assert board[["measured", "speedup"]].values.tolist() == [["NVIDIA H100 80GB HBM3", 2.0], ["NVIDIA H200", 4.0]]
    frame = lb.latest(lb.records_frame([on("NVIDIA H100 80GB HBM3", 2.0), on("NVIDIA H200", 1.0)]))
    assert lb.leaderboard(frame)["measured"].tolist() == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]  # as kb report calls it


@pytest.mark.parametrize("settings, label", [
    ({}, ""),
    ({"precision": "fp32", "atol": 1e-4, "rtol": None, "baseline": "eager", "judge": "reference"}, ""),
    ({"precision": "fp16", "atol": None, "rtol": None}, "fp16"),
    ({"precision": "fp32", "atol": 1e-2, "rtol": 1e-2}, "tol=0.01"),
    ({"precision": "fp32", "atol": 1e-3, "rtol": None}, "atol=0.001 rtol=0.0001"),
    ({"baseline": "compile", "judge": "fp64", "backward": True, "cuda_graph": True},
     "baseline=compile check=fp64 backward cuda-graph"),
    ({"size_overrides": {"n": 8, "batch_size": 2}, "seed": 7, "n_runs": 10, "time_budget_s": 1.0}, "batch_size=2 n=8"),
])
def test_measured_settings_names_only_what_differs_from_the_defaults(settings, label):
    assert lb.measured_settings(settings) == label


def test_untrusted_records_are_left_out_of_the_board_and_fast_p_and_listed_apart():
    frame = lb.records_frame([
        make(problem="1/7", sha="a" * 64, ref=(4.0,), new=(1.0,),
             flags=("problem cannot discriminate: an all-zeros output passes the check",)),
        make(problem="1/8", sha="b" * 64, ref=(9.0,), new=(1.0,),
             flags=("faster than the hardware floor: 0.001 ms measured, floor 0.01 ms",)),
        make(problem="1/8", sha="c" * 64, ref=(3.0,), new=(2.0,)),
        make(problem="1/9", sha="d" * 64, ref=(3.0,), new=(1.0,), flags=("stochastic reference: differs",)),
        make(problem="1/10", sha="e" * 64, ref=(3.0,), new=(1.0,),
             flags=("less work than the reference's operators: output-write bound 0.5 ms",)),
    ])
    board = lb.leaderboard(frame).set_index("problem")
    assert sorted(board.index) == ["1/10", "1/8"]
    assert board.loc["1/8", "speedup"] == 1.5 and board.loc["1/8", "candidates"] == 1
    assert board.loc["1/10", "speedup"] == 3.0  # information only
    assert lb.fast_p(board.reset_index()) == {0.0: 1.0, 1.0: 1.0, 1.5: 0.5, 2.0: 0.5}
    assert lb.geomean_speedup(board) == pytest.approx(math.sqrt(1.5 * 3.0))
    apart = lb.left_out(frame)
    assert apart["problem"].tolist() == ["1/7", "1/8", "1/9"]
    assert apart["reason"].tolist()[0] == "problem cannot discriminate: an all-zeros output passes the check"


def test_level_of_a_scratch_problem_is_other():
    frame = lb.records_frame([make(problem="2/71"), make(problem="x_scale-3fa9c2d1", sha="b" * 64)])
    assert lb.level(frame).tolist() == ["2", lb.OTHER_LEVEL]
