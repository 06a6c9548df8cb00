from pathlib import Path

import pytest

from kbharness.common.problems import ProblemError, discover, problem_from_path, resolve, solutions_for

ROOT = Path(__file__).resolve().parent.parent


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    return path


@pytest.fixture
def kernelbench_tree(tmp_path):
    """KernelBench's own layout, unchanged: levelN/ID_Name.py plus unrelated files."""
    _touch(tmp_path / "level1" / "19_ReLU.py")
    _touch(tmp_path / "level1" / "23_Softmax.py")
    _touch(tmp_path / "level2" / "71_Conv2d_Divide_LeakyReLU.py")
    _touch(tmp_path / "level2" / "54_Conv2d_Multiply_LeakyReLU_GELU.py")
    _touch(tmp_path / "level2" / "__init__.py")
    _touch(tmp_path / "README.md")
    return tmp_path


def test_discover_reads_kernelbench_layout_sorted(kernelbench_tree):
    found = discover(kernelbench_tree)
    assert [(p.level, p.id, p.name) for p in found] == [
        (1, 19, "ReLU"), (1, 23, "Softmax"),
        (2, 54, "Conv2d_Multiply_LeakyReLU_GELU"), (2, 71, "Conv2d_Divide_LeakyReLU"),
    ]


def test_resolve_by_level_and_id_name_part_and_path(kernelbench_tree):
    assert resolve("2/71", kernelbench_tree).name == "Conv2d_Divide_LeakyReLU"
    assert resolve("softmax", kernelbench_tree).key == "1/23"
    path = kernelbench_tree / "level1" / "19_ReLU.py"
    assert resolve(str(path), kernelbench_tree).key == "1/19"


def test_resolve_errors_are_one_line_and_name_the_problem(kernelbench_tree):
    with pytest.raises(ProblemError, match=r"^2/99: no problem with level 2 and id 99"):
        resolve("2/99", kernelbench_tree)
    with pytest.raises(ProblemError, match=r"^Conv2d: matches 2 problems .*be more specific$"):
        resolve("Conv2d", kernelbench_tree)
    with pytest.raises(ProblemError, match="no such problem file"):
        resolve("missing.py", kernelbench_tree)
    with pytest.raises(ProblemError, match="no such problems directory"):
        discover(kernelbench_tree / "nope")


def test_repository_suite_has_the_seed_problems_and_six_level1():
    problems = discover(ROOT / "problems")
    keys = {p.key for p in problems}
    assert {"2/71", "2/63", "2/54", "2/97"} <= keys
    assert sum(p.level == 1 for p in problems) >= 6


def test_solutions_for_lists_candidate_files():
    problem = problem_from_path(ROOT / "problems" / "level2" / "71_Conv2d_Divide_LeakyReLU.py")
    names = [p.name for p in solutions_for(problem, ROOT / "solutions")]
    assert "seed_001.txt" in names and "cpp_fused.py" in names


def test_scratch_problems_outside_a_level_tree_get_distinct_keys(tmp_path):
    a = tmp_path / "a" / "x_scale.py"
    b = tmp_path / "b" / "x_scale.py"
    c = tmp_path / "x_scale2.py"
    for path, body in ((a, "SCALE = 2\n"), (b, "SCALE = 3\n"), (c, "SCALE = 2\n")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    keys = [problem_from_path(p).key for p in (a, b, c)]
    assert len(set(keys)) == 3
    assert keys[0].startswith("x_scale-") and len(keys[0]) == len("x_scale-") + 8
    moved = tmp_path / "c" / "x_scale.py"
    moved.parent.mkdir()
    moved.write_text("SCALE = 2\n")
    assert problem_from_path(moved).key == keys[0]  # the content's hash, not the path's
    a.write_text("SCALE = 4\n")
    assert problem_from_path(a).key != keys[0]


def test_a_scratch_file_named_like_a_suite_problem_does_not_take_its_key(tmp_path, kernelbench_tree):
    scratch = tmp_path / "1_x.py"
    scratch.write_text("X = 1\n")
    assert problem_from_path(kernelbench_tree / "level1" / "19_ReLU.py").key == "1/19"
    key = problem_from_path(scratch).key
    assert key.startswith("1_x-") and "/" not in key
    unlevelled = tmp_path / "level_one" / "19_ReLU.py"
    unlevelled.parent.mkdir()
    unlevelled.write_text("")
    assert problem_from_path(unlevelled).key.startswith("19_ReLU-")


def test_resolve_accepts_the_key_a_scratch_problem_is_shown_by(tmp_path, kernelbench_tree):
    scratch = kernelbench_tree / "scratch" / "x_scale.py"
    scratch.parent.mkdir()
    scratch.write_text("SCALE = 2\n")
    key = problem_from_path(scratch).key
    assert resolve(key, kernelbench_tree).path == scratch
    with pytest.raises(ProblemError, match=r"^x_scale-00000000: no x_scale.py with that content under"):
        resolve("x_scale-00000000", kernelbench_tree)
