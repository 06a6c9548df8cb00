import json

import pytest

from kbharness.common.results import SCHEMA_VERSION, EvalRecord, SchemaError, Verdict

V1 = {"problem": "1/1", "problem_path": "p/1/1.py", "solution_path": "s/a.py", "solution_sha256": "a" * 64,
      "verdict": "correct", "flags": [], "schema_version": 1}


def test_schema_is_2():
    assert SCHEMA_VERSION == 2


def test_a_v1_record_without_the_new_fields_migrates_with_their_defaults():
    rec = EvalRecord.from_dict(V1)
    assert rec.verdict is Verdict.CORRECT
    assert (rec.memory, rec.judged_by, rec.notes) == ({}, "reference", ())
    assert rec.schema_version == 2


def test_a_v1_record_keeps_the_new_fields_it_already_has():
    rec = EvalRecord.from_dict({**V1, "judged_by": "fp64", "notes": ["no float64 run"], "memory": {"candidate": 8}})
    assert (rec.memory, rec.judged_by, rec.notes) == ({"candidate": 8}, "fp64", ("no float64 run",))


def test_a_record_without_schema_version_is_version_1():
    doc = {k: v for k, v in V1.items() if k != "schema_version"}
    rec = EvalRecord.from_dict(doc)
    assert rec.judged_by == "reference" and rec.schema_version == 2


def test_a_newer_schema_is_refused_by_name():
    with pytest.raises(SchemaError, match=r"^schema 3 is newer than this kbharness reads \(2\)$"):
        EvalRecord.from_dict({**V1, "schema_version": 3})


@pytest.mark.parametrize("version", [0, "2", None, True])
def test_a_version_that_is_not_one_is_refused(version):
    with pytest.raises(SchemaError, match="is not a schema version"):
        EvalRecord.from_dict({**V1, "schema_version": version})


def test_a_round_trip_keeps_schema_2():
    doc = json.loads(json.dumps(EvalRecord.from_dict(V1).to_dict()))
    assert doc["schema_version"] == 2
    assert EvalRecord.from_dict(doc) == EvalRecord.from_dict(V1)
