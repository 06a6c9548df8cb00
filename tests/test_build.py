"""The build cache: keyed by content and toolchain, shared by concurrent builders, fast on a
hit, and left usable by a build that was interrupted or killed."""
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from conftest import CANDIDATES, FAST, FIXTURES, ROOT, TINY_PROBLEM
from kbharness.orchestration.build import build_all, entry_of
from kbharness.common.buildcache import LOCK_FILE, build_key, clear_entry, prepare_build_env
from kbharness.cli import main
from kbharness.common.results import Verdict

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
    assert not results["compile_error.py"].ok
    assert results["compile_error.py"].message.startswith("main.cpp:5:24: error: cannot convert")
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
        if b"kbharness.orchestration.build" in cmdline and any(name.encode() in c for c in cmdline) and state != "Z":
            pids.append(int(entry.name))
    return pids


def test_cancel_kills_running_builds_and_skips_the_rest(tmp_path):
    from kbharness.orchestration.build import BuildPool

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
    from kbharness.common.problems import problem_from_path
    from kbharness.orchestration.jobs import Job, evaluate_jobs
    from kbharness.common.spec import Settings

    from conftest import FAST, TINY_PROBLEM

    problem = problem_from_path(TINY_PROBLEM)
    jobs = [Job(problem, CANDIDATES / "hang_in_build.py"), Job(problem, CANDIDATES / "correct.py")]

    def interrupt(job, outcome):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate_jobs(jobs, Settings(device="cuda", **FAST), None, build_cache, build_jobs=2, on_done=interrupt)
    # The sandbox's inner process dies with bwrap, which was waited for: on a loaded host its
    # exit can trail by a moment.
    deadline = time.monotonic() + 10
    while _builds_running("hang_in_build.py") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _builds_running("hang_in_build.py")


def _in_entry(entry: Path) -> list[str]:
    """Live processes building in a cache entry: compilers name it, ninja runs inside it."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cwd = os.readlink(proc / "cwd")
        except (OSError, IndexError):
            continue
        if state != "Z" and (entry.name in cmdline or cwd.startswith(str(entry))):
            found.append(cmdline[:120])
    return found


def _cpp_candidate(tmp_path: Path) -> Path:
    """A correct C++ scale_shift whose build no earlier session has cached."""
    candidate = tmp_path / "cpp_scale_shift.py"
    candidate.write_text((CANDIDATES / "compile_error.py").read_text()
                         .replace("    int not_a_tensor = x;\n", "").replace("kb_test_compile_error", "kb_test_interrupted")
                         + f"# build {uuid.uuid4().hex}\n")
    return candidate


@pytest.mark.slow
def test_an_interrupted_build_leaves_no_compiler_and_no_lock_that_blocks(tmp_path, build_cache, evaluate):
    candidate = _cpp_candidate(tmp_path)
    entry = entry_of(candidate, "cpu", build_cache)
    cmd = [sys.executable, "-m", "kbharness.cli", "run", "1/1", "--problems-dir", str(FIXTURES / "problems"),
           "--solution", str(candidate), "--device", "cpu", "--store", str(tmp_path / "evals.jsonl"),
           "--cache-dir", str(build_cache), "-q"]
    # Its own session, as a terminal's job is; SIGINT's default disposition, as Ctrl-C finds it.
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not any("cc1plus" in p for p in _in_entry(entry)):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err, err
    time.sleep(0.5)
    assert _in_entry(entry) == []
    assert list(entry.glob("*/lock")), "torch's lock file, left by the killed build, is what used to block"
    start = time.monotonic()
    record = evaluate(candidate, compile_timeout_s=300)
    assert record.verdict is Verdict.CORRECT, record.message
    assert time.monotonic() - start < 240 and not list(entry.glob("*/lock"))
    assert clear_entry(entry) and not entry.exists()


def test_a_killed_kb_build_takes_its_build_with_it(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "kbharness.cli", "build", str(CANDIDATES / "hang_in_build.py"),
                             "--device", "cpu", "--cache-dir", str(tmp_path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 60
    while not _builds_running("hang_in_build.py"):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while _builds_running("hang_in_build.py") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _builds_running("hang_in_build.py")


def _hold_lock(entry: Path) -> int:
    """Stand in for another process's build of that entry: hold its lock."""
    entry.mkdir(parents=True, exist_ok=True)
    fd = os.open(entry / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_a_build_that_gave_up_waiting_for_another_is_reported_not_stored(tmp_path):
    from kbharness.common.problems import problem_from_path
    from kbharness.orchestration.jobs import Job, evaluate_jobs
    from kbharness.common.spec import Settings
    from kbharness.orchestration.store import Store

    store = Store(tmp_path / "evals.jsonl")
    jobs = [Job(problem_from_path(TINY_PROBLEM), CANDIDATES / "correct.py")]
    settings = Settings(device="cpu", **{**FAST, "compile_timeout_s": 2})
    fd = _hold_lock(entry_of(CANDIDATES / "correct.py", "cpu", tmp_path))
    try:
        [gave_up] = evaluate_jobs(jobs, settings, store, tmp_path)
    finally:
        os.close(fd)
    assert gave_up.record.verdict is Verdict.LOST
    assert "waiting for another process's build" in gave_up.record.message
    assert store.records() == []
    [again] = evaluate_jobs(jobs, settings, store, tmp_path)
    assert again.record.verdict is Verdict.CORRECT and not again.from_store
    assert [r.verdict for r in store.records()] == [Verdict.CORRECT]


@pytest.mark.slow
def test_kb_build_says_cached_when_nothing_was_compiled(build_cache):
    args = ["build", str(CPP), "--device", "cpu", "--cache-dir", str(build_cache)]
    first = CliRunner().invoke(main, args, catch_exceptions=False)
    assert first.exit_code == 0 and first.output.split()[0] in ("built", "cached"), first.output
    second = CliRunner().invoke(main, args, catch_exceptions=False)
    assert second.exit_code == 0 and second.output.split()[0] == "cached", second.output


def test_cache_clear_removes_the_named_entries_or_all_and_leaves_a_busy_one(tmp_path):
    named, busy = CANDIDATES / "correct.py", CANDIDATES / "wrong.py"
    for candidate in (named, busy):
        entry = entry_of(candidate, "cpu", tmp_path)
        (entry / "ext").mkdir(parents=True)
        (entry / "ext" / "ext.so").write_bytes(b"")
    clear = ["cache", "clear", "--device", "cpu", "--cache-dir", str(tmp_path)]
    fd = _hold_lock(entry_of(busy, "cpu", tmp_path))
    try:
        r = CliRunner().invoke(main, [*clear, str(named), str(busy), str(CANDIDATES / "nan.py")])
    finally:
        os.close(fd)
    assert r.exit_code == 1
    assert f"cleared     {named}" in r.output and f"not cached  {CANDIDATES / 'nan.py'}" in r.output
    assert "busy: a build is running in" in r.output
    assert not entry_of(named, "cpu", tmp_path).exists() and entry_of(busy, "cpu", tmp_path).exists()
    r = CliRunner().invoke(main, [*clear, "--all"])
    assert r.exit_code == 0 and not list((tmp_path / "extensions").iterdir()), r.output
    r = CliRunner().invoke(main, clear)
    assert r.exit_code == 2 and "name the candidates whose entries to clear, or pass --all" in r.output
