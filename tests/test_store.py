import json

import pytest

from kbharness.common.results import CheckResult, EvalRecord, Timing, TrialError, Verdict
from kbharness.orchestration.store import Store, StoreError


def make(problem="1/1", sha="a" * 64, verdict=Verdict.CORRECT, ref=(2.0, 2.0, 4.0), new=(1.0, 1.0, 3.0), **kw):
    return EvalRecord(problem=problem, problem_path=f"p/{problem}.py", solution_path=f"s/{sha[:4]}.py",
                      solution_sha256=sha, verdict=verdict, settings_key=kw.pop("settings_key", "k1"),
                      ref_timing=Timing(ref) if ref else None, new_timing=Timing(new) if new else None,
                      trials=(TrialError(43, True, 0.0, 0.0),), checks=(CheckResult("x", True),),
                      env=kw.pop("env", {"device": "cpu", "gpu": None}),
                      timestamp_utc=kw.pop("ts", "2026-11-23T10:00:00+00:00"), **kw)


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


def test_a_record_appended_after_a_torn_tail_stays_readable(tmp_path):
    path = tmp_path / "evals.jsonl"
    store = Store(path)
    store.append(make(problem="1/1"))
    line = path.read_bytes()
    path.write_bytes(line + line[: len(line) // 2])  # the second record cut mid-write
    store.append(make(problem="1/3"))
    contents = store.read()
    assert [r.problem for r in contents.records] == ["1/1", "1/3"]
    assert contents.unreadable == (2,)
    assert contents.warning(path) == f"{path}: 1 unreadable line skipped (line 2)"


def test_unreadable_lines_are_counted_by_number(tmp_path):
    path = tmp_path / "evals.jsonl"
    good = json.dumps(make().to_dict())
    lines = [good, "[1, 2, 3]", "42", "garbage", good, '{"problem": "1/1"}', '{"verdict": "nope"}', "", good]
    path.write_text("\n".join(lines) + "\n")
    contents = Store(path).read()
    assert len(contents.records) == 3
    assert contents.unreadable == (2, 3, 4, 6, 7)
    assert contents.warning(path) == f"{path}: 5 unreadable lines skipped (lines 2, 3, 4, 6, 7)"


def test_a_binary_file_is_refused_in_one_line(tmp_path):
    path = tmp_path / "evals.jsonl"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(StoreError, match=r"evals.jsonl: not a results store \(binary data"):
        Store(path).read()
    path.write_bytes(b"\xff\xfe\x80 compressed \n\x9c\xd3\n")
    with pytest.raises(StoreError, match=r"evals.jsonl: not a results store \(not UTF-8 text, no record in it\)"):
        Store(path).read()


def test_a_line_that_is_not_utf8_is_one_unreadable_line(tmp_path):
    path = tmp_path / "evals.jsonl"
    good = json.dumps(make().to_dict()).encode()
    path.write_bytes(good + b"\n" + b"\xff\xfe{" * 3000 + b"\n" + good + b"\n")
    contents = Store(path).read()
    assert len(contents.records) == 2 and contents.unreadable == (2,)


def test_missing_store_reads_empty(tmp_path):
    assert Store(tmp_path / "none.jsonl").records() == []


def test_a_record_of_a_newer_schema_is_reported_by_line_with_the_reason(tmp_path):
    path = tmp_path / "evals.jsonl"
    good = make().to_dict()
    lines = [json.dumps(good), "garbage", json.dumps({**good, "schema_version": 3})]
    path.write_text("\n".join(lines) + "\n")
    contents = Store(path).read()
    assert len(contents.records) == 1 and contents.unreadable == (2, 3)
    assert contents.warning(path) == (f"{path}: 2 unreadable lines skipped (lines 2, 3); "
                                      "line 3: schema 3 is newer than this kbharness reads (2)")


def test_a_v1_line_is_read_as_schema_2(tmp_path):
    path = tmp_path / "evals.jsonl"
    doc = {k: v for k, v in make().to_dict().items() if k not in ("memory", "judged_by", "notes")}
    path.write_text(json.dumps({**doc, "schema_version": 1}) + "\n")
    (rec,) = Store(path).records()
    assert rec == make() and rec.schema_version == 2
