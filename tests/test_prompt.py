"""`kb prompt`: the instructions, a worked example and the problem's own source."""
from conftest import ROOT
from test_cli import invoke


def test_prompt_holds_the_problem_source_and_an_example_for_the_device():
    r = invoke("prompt", "2/71", "--problems-dir", ROOT / "problems")
    assert r.exit_code == 0
    source = (ROOT / "problems" / "level2" / "71_Conv2d_Divide_LeakyReLU.py").read_text()
    assert source in r.output and "__global__ void add_kernel" in r.output and "ModelNew" in r.output
    cpu = invoke("prompt", "2/71", "--problems-dir", ROOT / "problems", "--device", "cpu")
    assert "at::parallel_for" in cpu.output and "__global__" not in cpu.output
    assert invoke("prompt", "9/9", "--problems-dir", ROOT / "problems").exit_code == 2


def test_prompt_in_triton_has_a_triton_example_that_is_detected_as_triton():
    from kbharness.common import languages
    from kbharness.orchestration.prompt import EXAMPLE_TRITON

    r = invoke("prompt", "2/71", "--problems-dir", ROOT / "problems", "--language", "triton")
    assert r.exit_code == 0
    assert "custom Triton kernels" in r.output and "@triton.jit" in r.output and "load_inline" not in r.output
    assert languages.detect(EXAMPLE_TRITON).name == "triton"
    assert languages.own_kernels(EXAMPLE_TRITON) == {"add_kernel"}
    assert invoke("prompt", "2/71", "--problems-dir", ROOT / "problems", "--language", "rust").exit_code == 2


def test_every_prompt_example_is_detected_as_its_language_and_defines_its_kernel():
    from kbharness.common import languages
    from kbharness.orchestration.prompt import EXAMPLES

    for name, (example, _) in EXAMPLES.items():
        assert languages.detect(example).name == name
        assert "class ModelNew" in example
        if name != "cpp":
            assert languages.own_kernels(example), name
    r = invoke("prompt", "2/71", "--problems-dir", ROOT / "problems", "--language", "tilelang")
    assert r.exit_code == 0 and "@T.prim_func" in r.output and "custom TileLang kernels" in r.output
