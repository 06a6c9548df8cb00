
import pytest

from conftest import CANDIDATES, TINY_PROBLEM
from kbharness.common.loading import LoadError, exec_module, load_model_new, load_problem, read_solution


def test_problem_loads_and_size_override_changes_inputs():
    module = load_problem(TINY_PROBLEM, {"batch_size": 2, "dim": 5})
    assert module.get_inputs()[0].shape == (2, 5)
    assert load_problem(TINY_PROBLEM).get_inputs()[0].shape == (4, 64)


def test_unknown_size_override_is_a_clear_error():
    with pytest.raises(LoadError, match="size override 'batchsize' names no module constant"):
        load_problem(TINY_PROBLEM, {"batchsize": 2})


def test_problem_without_get_inputs_is_rejected(tmp_path):
    bad = tmp_path / "1_Bad.py"
    bad.write_text("import torch.nn as nn\nclass Model(nn.Module):\n    pass\ndef get_init_inputs():\n    return []\n")
    with pytest.raises(LoadError, match="problem defines no get_inputs"):
        load_problem(bad)


@pytest.mark.parametrize("name, message", [
    ("syntax_error.py", r"SyntaxError: .*\(syntax_error.py, line 4\)"),
    ("no_modelnew.py", "no_modelnew.py: defines no class ModelNew"),
    ("import_error.py", "ModuleNotFoundError: No module named 'kbharness_no_such_module'"),
])
def test_candidate_load_errors_say_what_is_wrong(name, message, tmp_path):
    with pytest.raises(LoadError, match=message) as info:
        load_model_new(read_solution(CANDIDATES / name), tmp_path)
    assert not info.value.compile


def test_completion_is_extracted_and_hashed(tmp_path):
    completion = tmp_path / "answer.txt"
    completion.write_text("thoughts</think>\n```python\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    pass\n```\n")
    source = read_solution(completion)
    assert source.code.startswith("import torch.nn")
    assert len(source.sha256) == 64
    assert load_model_new(source, tmp_path).__name__ == "ModelNew"
    assert (tmp_path / "answer.extracted.py").exists()


def test_cuda_candidates_are_recognised():
    assert read_solution(CANDIDATES / "cuda_kernel.py").needs_cuda
    assert not read_solution(CANDIDATES / "correct.py").needs_cuda


def test_unreadable_solution(tmp_path):
    with pytest.raises(LoadError, match="cannot read"):
        read_solution(tmp_path / "missing.py")


def test_a_compile_error_is_named_by_the_compilers_first_error_with_the_whole_log_kept(tmp_path):
    log = ("Error building extension 'ext': [1/2] c++ -MMD -MF main.o.d -Wno-error=deprecated -c "
           "/cache/extensions/0a1b/ext/main.cpp -o main.o\nFAILED: main.o\n"
           "/cache/extensions/0a1b/ext/main.cpp: In function 'at::Tensor f(at::Tensor)':\n"
           "/cache/extensions/0a1b/ext/main.cpp:18:15: error: expected ';' before '}' token\n"
           "/cache/extensions/0a1b/ext/main.cpp:20:1: error: expected '}' at end of input\n"
           "ninja: build stopped: subcommand failed.")
    candidate = tmp_path / "broken.py"
    candidate.write_text(f"raise RuntimeError({log!r})\n")
    with pytest.raises(LoadError) as info:
        load_model_new(read_solution(candidate), tmp_path)
    assert info.value.compile
    assert str(info.value) == "main.cpp:18:15: error: expected ';' before '}' token"
    assert "[1/2] c++ -MMD" in info.value.log and "main.cpp:20:1: error" in info.value.log


def test_a_candidates_annotations_are_evaluated_as_python_would(tmp_path):
    """The loader's own ``from __future__ import annotations`` must not leak into the candidate:
    a DSL reads annotations that name the enclosing function's locals."""
    path = tmp_path / "annotated.py"
    path.write_text("def build(dtype):\n    def kernel(x: dtype):\n        pass\n    return kernel\n")
    module = exec_module(path.read_text(), str(path), "kb_annotated")
    assert module.build(int).__annotations__ == {"x": int}
