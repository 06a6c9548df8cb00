"""The build cache: keyed by content and toolchain, shared by concurrent builders, fast on a hit."""
import shutil
import time
from pathlib import Path

import pytest
import torch

from conftest import CANDIDATES, ROOT
from kbharness.build import build_all, build_key, prepare_build_env

CPP = ROOT / "solutions" / "level1" / "34_Broadcast_multiply_add" / "cpp_fused.py"


def test_key_follows_code_and_toolchain(monkeypatch):
    code = CPP.read_text()
    assert build_key(code, "cpu") == build_key(code, "cpu")
    assert build_key(code, "cpu") != build_key(code + "\n# edited", "cpu")
    before = build_key(code, "cpu")
    monkeypatch.setattr(torch, "__version__", "0.0.0")
    assert build_key(code, "cpu") != before


def test_each_key_gets_its_own_extensions_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    a = prepare_build_env(tmp_path, "one", "cpu")
    b = prepare_build_env(tmp_path, "two", "cpu")
    assert a != b and a.parent == b.parent == tmp_path / "extensions"
    import os

    assert os.environ["TORCH_EXTENSIONS_DIR"] == str(b)


@pytest.mark.slow
def test_concurrent_builders_share_one_build_and_a_hit_is_fast(tmp_path, build_cache):
    twin = tmp_path / "twin.py"
    shutil.copy(CPP, twin)
    results = list(build_all([CPP, twin], "cpu", build_cache, jobs=2))
    assert all(r.ok for r in results), [r.message for r in results]
    start = time.monotonic()
    [again] = list(build_all([CPP], "cpu", build_cache, jobs=1))
    assert again.ok and time.monotonic() - start < 15  # a fresh process and an import, no compiler


@pytest.mark.slow
def test_a_failing_build_is_reported_and_the_others_still_build(build_cache):
    results = {Path(r.solution).name: r for r in build_all([CANDIDATES / "compile_error.py", CPP], "cpu", build_cache, 2)}
    assert not results["compile_error.py"].ok and "error" in results["compile_error.py"].message.lower()
    assert results["cpp_fused.py"].ok


def test_a_cuda_candidate_is_not_built_for_the_cpu(tmp_path):
    [r] = list(build_all([ROOT / "solutions" / "level2" / "71_Conv2d_Divide_LeakyReLU" / "cuda_fused.py"], "cpu",
                         tmp_path, 1))
    assert not r.ok and r.message == "needs CUDA; not built for the CPU" and r.seconds == 0.0
