"""Kernel languages: detection, what each needs, how its compile errors read (Triton does not
run on the CPU: its errors are recorded messages raised from classes of Triton's module
names), and the verdicts an evaluation gives them."""
import dataclasses

import pytest

from conftest import CANDIDATES, FAST, TINY_PROBLEM, evaluate_here
from kbharness.common import languages
from kbharness.judge.evaluate import classify_exception
from kbharness.common.kernels import custom_kernels
from kbharness.common.results import Verdict
from kbharness.common.spec import EvalSpec, Settings

TRITON_SRC = '''import torch
import triton
import triton.language as tl
from torch.utils.cpp_extension import load_inline


@triton.autotune(configs=[triton.Config({"BLOCK": 256})], key=["n"])
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass
'''


def _dsl_error(module: str, name: str, message: str) -> Exception:
    cls = type(name, (Exception,), {"__module__": module})
    return cls(message)


@pytest.mark.parametrize("source, name", [
    (TRITON_SRC, "triton"),  # a DSL wins over the load_inline it also uses
    ("import cutlass\nimport cutlass.cute as cute\n@cute.kernel\ndef k(a):\n    pass\n", "cute"),
    ("import tilelang\nimport tilelang.language as T\n", "tilelang"),
    ("from torch.utils.cpp_extension import load_inline\nsrc = '__global__ void k() {}'\n", "cuda"),
    ("from torch.utils.cpp_extension import load_inline\next = load_inline(name='x', cpp_sources='')\n", "cpp"),
    ("import torch\nclass ModelNew(torch.nn.Module):\n    pass\n", "pytorch"),
    ("import torch\n# a comment about triton and 'import triton' in a string\n", "pytorch"),
])
def test_a_candidates_language_is_detected_from_its_source(source, name):
    assert languages.detect(source).name == name


def test_a_named_language_overrides_detection_and_an_unknown_one_is_refused():
    assert languages.of("import torch", "triton").name == "triton"
    with pytest.raises(languages.UnknownLanguage, match="choose one of tilelang, cute, triton, cuda, cpp, pytorch"):
        languages.of("import torch", "rust")


def test_what_each_language_needs():
    assert [lang.name for lang in languages.REGISTRY if lang.needs_cuda] == ["tilelang", "cute", "triton", "cuda"]
    assert [lang.name for lang in languages.REGISTRY if lang.lazy] == ["tilelang", "cute", "triton"]
    assert languages.by_name("cute").packages == (("cutlass", "nvidia-cutlass-dsl"),)
    missing = dataclasses.replace(languages.TRITON, packages=(("kb_no_such_module", "kb-no-such-package"),))
    assert missing.missing() == ["kb-no-such-package"]
    assert languages.by_name("cpp").missing() == []


def test_a_triton_compile_error_keeps_its_position_and_reason():
    recorded = ("at 5:12:\n    pid = tl.program_id(0)\n    x = tl.load(x_ptr + offs)\n            ^\n"
                "NameError('offs is not defined')")
    e = _dsl_error("triton.compiler.errors", "CompilationError", recorded)
    verdict, message, _ = classify_exception(e)
    assert verdict is Verdict.COMPILE_ERROR
    assert message == "Triton CompilationError at 5:12: NameError('offs is not defined')"
    resources = _dsl_error("triton.runtime.errors", "OutOfResources",
                           "out of resource: shared memory, Required: 262144, Hardware limit: 232448.")
    assert classify_exception(resources)[:2] == (
        Verdict.COMPILE_ERROR, "Triton OutOfResources: out of resource: shared memory, Required: 262144, "
                               "Hardware limit: 232448.")


def test_a_dsl_error_inside_a_candidates_own_exception_is_still_a_compile_error():
    try:
        try:
            raise _dsl_error("cutlass.base_dsl.common", "DSLRuntimeError", "unsupported layout for copy atom")
        except Exception as inner:
            raise RuntimeError("kernel setup failed") from inner
    except RuntimeError as outer:
        verdict, message, _ = classify_exception(outer)
    assert verdict is Verdict.COMPILE_ERROR and message == "unsupported layout for copy atom"
    assert classify_exception(ValueError("bad shape"))[0] is Verdict.RUNTIME_ERROR  # not a DSL's


def test_triton_kernels_count_as_the_candidates_own():
    assert languages.own_kernels(TRITON_SRC) == {"scale_kernel"}
    launched = [("scale_kernel", 10.0), ("void at::native::vectorized_elementwise_kernel<4>(float*)", 2.0)]
    assert custom_kernels(launched, TRITON_SRC) == ["scale_kernel"]


def _in_process(solution, tmp_path, **kw):
    spec = EvalSpec(TINY_PROBLEM, solution, Settings(device="cpu", **FAST), tmp_path / "cache", **kw)
    return evaluate_here(spec, tmp_path)


def test_a_gpu_language_on_the_cpu_needs_cuda(tmp_path):
    path = tmp_path / "triton_candidate.py"
    path.write_text(TRITON_SRC)
    r = _in_process(path, tmp_path)
    assert r.verdict is Verdict.NEEDS_CUDA and r.language == "triton"


def test_a_language_not_installed_is_needs_package_with_the_extra_to_install(tmp_path, monkeypatch):
    absent = dataclasses.replace(languages.PYTORCH, name="absent", label="Absent DSL", extra="absent",
                                 packages=(("kb_no_such_module", "kb-no-such-package"),))
    monkeypatch.setattr(languages, "REGISTRY", (absent,))
    r = _in_process(CANDIDATES / "correct.py", tmp_path, language="absent")
    assert r.verdict is Verdict.NEEDS_PACKAGE
    assert r.message == "needs kb-no-such-package: a Absent DSL candidate; pip install '.[absent]'"


def test_a_lazy_languages_first_call_is_the_build_and_its_error_a_compile_error(tmp_path, monkeypatch):
    lazy = dataclasses.replace(languages.PYTORCH, name="lazy", lazy=True, error_modules=("kb_fake_dsl",))
    monkeypatch.setattr(languages, "REGISTRY", (lazy,))
    path = tmp_path / "lazy_candidate.py"
    path.write_text(
        "import torch\n"
        "Error = type('CompilationError', (Exception,), {'__module__': 'kb_fake_dsl.compiler'})\n"
        "class ModelNew(torch.nn.Module):\n"
        "    def __init__(self, *args):\n        super().__init__()\n"
        "    def forward(self, x):\n        raise Error('at 1:0:\\nbad\\nTypeError(\"no\")')\n")
    r = _in_process(path, tmp_path, language="lazy")
    assert r.verdict is Verdict.COMPILE_ERROR, r.message
    assert r.trials == () and "build" not in r.phase_s  # failed in the build phase, before any checked trial


def test_a_lazy_languages_honest_candidate_is_correct_with_its_warm_up_in_the_build(tmp_path, monkeypatch):
    lazy = dataclasses.replace(languages.PYTORCH, name="lazy", lazy=True)
    monkeypatch.setattr(languages, "REGISTRY", (lazy,))
    path = tmp_path / "compiles_at_first_call.py"  # as a JIT language does, 0.5 s at its first call
    path.write_text((CANDIDATES / "correct.py").read_text().replace("import torch.nn as nn", "import time\n\nimport torch.nn as nn")
                    .replace("        self.scale = scale\n", "        self.scale = scale\n        self.compiled = False\n")
                    .replace("    def forward(self, x):\n", "    def forward(self, x):\n        if not self.compiled:\n"
                             "            time.sleep(0.5)\n            self.compiled = True\n"))
    r = _in_process(path, tmp_path, language="lazy")
    assert r.verdict is Verdict.CORRECT, r.message
    assert r.language == "lazy" and r.build_s >= 0.5


def test_kb_run_language_names_the_language_and_an_unknown_one_is_a_usage_error(tmp_path):
    from test_cli import invoke

    r = invoke("compare", str(TINY_PROBLEM), str(CANDIDATES / "correct.py"), "--device", "cpu", "--language", "triton",
               "--no-store", "--no-sandbox")
    assert r.exit_code == 0 and "needs CUDA" in r.output
    assert invoke("compare", str(TINY_PROBLEM), str(CANDIDATES / "correct.py"), "--language", "rust").exit_code == 2


@pytest.mark.parametrize("path", sorted((CANDIDATES.parents[2] / "solutions").glob("level*/*/triton_*.py")),
                         ids=lambda p: p.parent.name)
def test_the_suites_triton_candidates_parse_and_are_triton_with_kernels_of_their_own(path):
    source = path.read_text()
    compile(source, str(path), "exec")
    assert languages.detect(source).name == "triton" and languages.own_kernels(source)
