"""A run against a saved one: matching by content then by name, and changes only beyond the CI."""
import json
from dataclasses import replace

from conftest import CANDIDATES, TINY_PROBLEM
from kbharness.reporting.history import against
from kbharness.common.results import EvalRecord, Timing, Verdict
from test_cli import FAST, invoke

NOISE = (0.99, 1.0, 1.01, 1.0, 0.995, 1.005) * 5


def _rec(name="a.py", sha="s1", verdict=Verdict.CORRECT, speedup=2.0, t="2026-01-01T00:00:00"):
    return EvalRecord(problem="1/1", problem_path="p.py", solution_path=f"x/{name}", solution_sha256=sha,
                      verdict=verdict, ref_timing=Timing(tuple(speedup * v for v in NOISE)),
                      new_timing=Timing(NOISE), env={"device": "cuda:0"}, timestamp_utc=t)


def test_changes_beyond_the_interval_and_verdict_changes():
    saved = [_rec(speedup=2.0, t="2026-01-01"), _rec(speedup=3.0, t="2026-01-02"),
             _rec(name="b.py", sha="old", speedup=1.0), _rec(name="c.py", sha="c")]
    now = [_rec(speedup=2.0), _rec(name="b.py", sha="new", speedup=1.5), _rec(name="c.py", sha="c", verdict=Verdict.CRASH),
           _rec(name="d.py", sha="d")]
    changes = against(now, saved)
    assert [c.status for c in changes] == ["regression", "improvement", "regression", "new"]
    assert changes[0].previous.speedup == 3.0  # the newest saved record of that content
    assert changes[0].text().startswith("a.py: regression against the saved run: 3.00× → 2.00× (95% CI")
    assert changes[1].previous.solution_sha256 == "old"  # an edited file matched by name
    assert changes[2].text() == "c.py: regression: correct → crash"
    assert changes[3].text() == "d.py: not in the saved run"
    assert against([_rec(speedup=2.0)], [_rec(speedup=2.01)])[0].status == "unchanged"


def test_a_run_on_another_gpu_model_is_not_compared():
    def on(gpu, speedup):
        return replace(_rec(speedup=speedup), env={"device": "cuda:0", "gpu": gpu})

    assert against([on("NVIDIA H200", 3.0)], [on("NVIDIA H100 80GB HBM3", 2.0)])[0].status == "new"
    assert against([on("NVIDIA H200", 3.0)], [on("NVIDIA H200", 2.0)])[0].status == "improvement"


def test_a_run_with_other_sizes_is_not_compared():
    def sized(batch, speedup):
        return replace(_rec(speedup=speedup), settings={"size_overrides": {"batch_size": batch}})

    assert against([sized(16, 2.2)], [sized(4, 1.25)])[0].status == "new"
    assert against([sized(16, 2.2)], [sized(16, 1.25)])[0].status == "improvement"


def test_a_move_outside_the_interval_but_within_the_threshold_is_unchanged():
    tight = replace(_rec(speedup=2.0), ref_timing=Timing((2.0,) * 30), new_timing=Timing((1.0,) * 30))
    assert against([tight], [_rec(speedup=2.02)])[0].status == "unchanged"
    assert against([tight], [_rec(speedup=2.02)], threshold=0.005)[0].status == "regression"
    assert against([tight], [_rec(speedup=2.1)])[0].status == "regression"


def test_compare_against_a_saved_store_marks_the_regression(tmp_path, build_cache):
    store = tmp_path / "now.jsonl"
    r = invoke("compare", TINY_PROBLEM, CANDIDATES / "correct.py", *FAST, "--store", store, "--cache-dir", build_cache)
    assert r.exit_code == 0
    record = json.loads(store.read_text())
    record["ref_timing"]["times_ms"] = [t * 1000 for t in record["ref_timing"]["times_ms"]]
    record["env"]["device"] = "cpu"
    saved = tmp_path / "saved.jsonl"
    saved.write_text(json.dumps(record) + "\n")
    again = invoke("compare", TINY_PROBLEM, CANDIDATES / "correct.py", *FAST, "--no-store", "--cache-dir", build_cache,
                   "--against", saved)
    assert again.exit_code == 0, again.output
    assert "correct.py: regression against the saved run" in again.output
