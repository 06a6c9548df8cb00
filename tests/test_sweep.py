"""Sweeps: which problem a candidate belongs to, and a sweep that resumes from the store."""
import json
import re
import shutil

import pytest

from conftest import CANDIDATES, FIXTURES
from kbharness.common.problems import problem_from_path
from kbharness.orchestration.sweep import SweepError, candidates, place
from test_cli import FAST, invoke

PROBLEMS = FIXTURES / "problems"


@pytest.fixture
def generated(tmp_path):
    """Candidates laid out three ways: solutions-style folders, generated names, a manifest."""
    folder = tmp_path / "gen" / "level1" / "1_Scale_shift"
    folder.mkdir(parents=True)
    shutil.copy(CANDIDATES / "correct.py", folder / "a.py")
    shutil.copy(CANDIDATES / "wrong.py", folder / "b.py")
    shutil.copy(CANDIDATES / "correct.py", tmp_path / "gen" / "level_1_problem_1_sample_3_kernel.py")
    odd = tmp_path / "gen" / "odd"
    odd.mkdir()
    shutil.copy(CANDIDATES / "correct.py", odd / "mystery.py")
    shutil.copy(CANDIDATES / "correct.py", odd / "orphan.py")
    (tmp_path / "gen" / ".hidden").mkdir()
    (tmp_path / "gen" / ".hidden" / "x.py").write_text("")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"gen/odd/myst*.py": "1/1"}))
    return tmp_path / "gen", manifest


def test_each_candidate_is_placed_by_manifest_folder_or_name(generated):
    gen, manifest = generated
    jobs, unplaced = place(candidates([gen]), PROBLEMS, manifest)
    placed = {j.solution.name: j.problem.key for j in jobs}
    assert placed == {"a.py": "1/1", "b.py": "1/1", "level_1_problem_1_sample_3_kernel.py": "1/1", "mystery.py": "1/1"}
    assert [u.path.name for u in unplaced] == ["orphan.py"]
    assert "no manifest entry" in unplaced[0].reason


def test_unknown_problem_and_bad_manifest_are_reported(tmp_path):
    f = tmp_path / "level_7_problem_3.py"
    f.write_text("")
    _, unplaced = place([f], PROBLEMS)
    assert unplaced[0].reason == f"problem 7/3 is not under {PROBLEMS}"
    bad = tmp_path / "m.json"
    bad.write_text("[1, 2]")
    with pytest.raises(SweepError, match="m.json: a manifest maps candidate paths"):
        place([f], PROBLEMS, bad)
    with pytest.raises(SweepError, match="nope: no such file or folder"):
        candidates([tmp_path / "nope"])


def test_a_manifest_names_a_scratch_problem_by_path_or_key(tmp_path):
    scratch = tmp_path / "scratch" / "x_scale.py"
    scratch.parent.mkdir()
    scratch.write_text((PROBLEMS / "level1" / "1_Scale_shift.py").read_text())
    by_path, by_key = tmp_path / "a.py", tmp_path / "b.py"
    by_path.write_text("")
    by_key.write_text("")
    manifest = tmp_path / "manifest.json"
    key = problem_from_path(scratch).key
    manifest.write_text(json.dumps({"a.py": "scratch/x_scale.py", "b.py": key, "c.py": "x_scale-00000000"}))
    missing = tmp_path / "c.py"
    missing.write_text("")
    jobs, unplaced = place([by_path, by_key, missing], tmp_path / "scratch", manifest)
    assert [(j.solution.name, j.problem.key) for j in jobs] == [("a.py", key), ("b.py", key)]
    assert unplaced[0].reason.startswith("x_scale-00000000: no x_scale.py with that content")


def test_sweep_evaluates_once_then_resumes_from_the_store(generated, tmp_path, build_cache):
    gen, manifest = generated
    store = tmp_path / "s.jsonl"
    args = ["sweep", gen, "--problems-dir", PROBLEMS, "--manifest", manifest, *FAST, "--store", store,
            "--cache-dir", build_cache]
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    assert "skipped" in first.output and "orphan.py: no manifest entry" in first.output
    assert store.read_text().count("\n") == 4
    records = [json.loads(line) for line in store.read_text().splitlines()]
    assert sorted(r["verdict"] for r in records) == ["correct", "correct", "correct", "incorrect"]
    assert "leaderboard" in first.output and "fast_0=1.00" in first.output
    assert re.search(r"device idle: cpu \d+% of \d+ s", first.output)
    again = invoke(*args)
    assert again.exit_code == 0
    assert "4 of 4 results are from" in again.output and "device idle" not in again.output
    assert store.read_text().count("\n") == 4
    forced = invoke(*args, "--force")
    assert forced.exit_code == 0 and store.read_text().count("\n") == 8
