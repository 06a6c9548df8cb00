import json

from kbharness.results import CheckResult, EvalRecord, Timing, TrialError, Verdict
from kbharness.store import Store


def make(problem="1/1", sha="a" * 64, verdict=Verdict.CORRECT, ref=(2.0, 2.0, 4.0), new=(1.0, 1.0, 3.0), **kw):
    return EvalRecord(problem=problem, problem_path=f"p/{problem}.py", solution_path=f"s/{sha[:4]}.py",
                      solution_sha256=sha, verdict=verdict, settings_key="k1",
                      ref_timing=Timing(ref) if ref else None, new_timing=Timing(new) if new else None,
                      trials=(TrialError(43, True, 0.0, 0.0),), checks=(CheckResult("x", True),),
                      env={"device": "cpu", "gpu": None}, timestamp_utc=kw.pop("ts", "2026-11-23T10:00:00+00:00"), **kw)


def test_record_round_trips_with_stats(tmp_path):
    store = Store(tmp_path / "evals.jsonl")
    rec = make()
    store.append(rec)
    (back,) = store.records()
    assert back == rec
    line = json.loads((tmp_path / "evals.jsonl").read_text())
    assert line["speedup"] == 2.0
    assert line["ref_timing"]["median_ms"] == 2.0 and line["ref_timing"]["max_ms"] == 4.0
    assert line["ref_timing"]["times_ms"] == [2.0, 2.0, 4.0]
    assert line["verdict"] == "correct"


def test_torn_last_line_is_skipped_and_appending_goes_on(tmp_path):
    path = tmp_path / "evals.jsonl"
    store = Store(path)
    store.append(make(problem="1/1"))
    with open(path, "a") as f:
        f.write('{"problem": "1/2", "verd')
    assert [r.problem for r in store] == ["1/1"]
    assert store.done_keys() == {("1/1", "a" * 64, "k1")}


def test_missing_store_reads_empty(tmp_path):
    assert Store(tmp_path / "none.jsonl").records() == []
