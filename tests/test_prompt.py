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
