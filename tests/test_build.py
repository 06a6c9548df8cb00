"""The build cache: keyed by content and toolchain, shared by concurrent builders, fast on a hit."""
import shutil
import threading
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


def _builds_running(name: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if b"kbharness.build" in cmdline and any(name.encode() in c for c in cmdline) and state != "Z":
            pids.append(int(entry.name))
    return pids


def test_cancel_kills_running_builds_and_skips_the_rest(tmp_path):
    from kbharness.build import BuildPool

    pool = BuildPool("cpu", tmp_path, jobs=1, timeout_s=600)
    results = []
    consumer = threading.Thread(target=lambda: results.extend(
        pool.run([CANDIDATES / "hang_in_build.py", CANDIDATES / "correct.py"])))
    consumer.start()
    deadline = time.monotonic() + 60
    while not _builds_running("hang_in_build.py") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _builds_running("hang_in_build.py")
    pool.cancel()
    consumer.join(timeout=30)
    assert not consumer.is_alive()
    assert {Path(r.solution).name: r.message for r in results} == {
        "hang_in_build.py": "build cancelled", "correct.py": "build cancelled"}
    assert not _builds_running("hang_in_build.py")


def test_an_interrupted_sweep_leaves_no_compiler_behind(tmp_path, build_cache):
    from kbharness.problems import problem_from_path
    from kbharness.runner import Job, evaluate_jobs
    from kbharness.spec import Settings

    from conftest import FAST, TINY_PROBLEM

    problem = problem_from_path(TINY_PROBLEM)
    jobs = [Job(problem, CANDIDATES / "hang_in_build.py"), Job(problem, CANDIDATES / "correct.py")]

    def interrupt(job, outcome):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate_jobs(jobs, Settings(device="cuda", **FAST), None, build_cache, build_jobs=2, on_done=interrupt)
    assert not _builds_running("hang_in_build.py")
