"""Backends: the local pool and a real local Ray cluster give the same verdicts; a Ray
worker lost mid-task is retried, then recorded as lost; an interrupted local pool leaves
no worker running."""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import CANDIDATES, FAST, TINY_PROBLEM
from kbharness.execution import sandbox
from kbharness.orchestration.backends import LocalBackend, RayBackend, evaluate_shipped
from kbharness.common.results import Verdict
from kbharness.common.spec import EvalSpec, Settings

NAMES = ["correct.py", "wrong.py", "runtime_error.py", "no_modelnew.py"]


@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()


def _specs(cache: Path) -> list[EvalSpec]:
    settings = Settings(device="cpu", **FAST)
    return [EvalSpec(TINY_PROBLEM, CANDIDATES / n, settings, cache) for n in NAMES]


def test_ray_gives_the_local_verdicts_with_the_drivers_paths(cluster, build_cache):
    specs = _specs(build_cache)
    local = dict(LocalBackend().run(specs))
    remote = dict(RayBackend().run(specs))
    assert sorted(remote) == [0, 1, 2, 3]
    assert [remote[i].verdict for i in range(4)] == [local[i].verdict for i in range(4)] == [
        Verdict.CORRECT, Verdict.INCORRECT, Verdict.RUNTIME_ERROR, Verdict.LOAD_ERROR]
    assert [Path(remote[i].solution_path).name for i in range(4)] == NAMES
    assert remote[0].solution_sha256 == local[0].solution_sha256 and remote[0].problem == "1/1"


def dies_once(marker: Path):
    def task(spec_json, problem_text, solution_bytes):
        if not marker.exists():
            marker.write_text("died")
            os._exit(1)
        return evaluate_shipped(spec_json, problem_text, solution_bytes)
    return task


def always_dies(spec_json, problem_text, solution_bytes):
    os._exit(1)


def test_a_lost_worker_is_retried_then_recorded_as_lost(cluster, build_cache, tmp_path):
    spec = _specs(build_cache)[:1]
    [(_, retried)] = RayBackend(max_retries=1, task=dies_once(tmp_path / "marker")).run(spec)
    assert (tmp_path / "marker").exists() and retried.verdict is Verdict.CORRECT
    [(_, lost)] = RayBackend(max_retries=1, task=always_dies).run(spec)
    assert lost.verdict is Verdict.LOST
    assert lost.message.startswith("lost after 2 attempts") and lost.problem == "1/1"


def test_an_interrupted_pool_kills_the_workers_of_every_thread(build_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("KB_FORKSERVER", "0")  # plain processes, which nothing else would end
    # The workers' run dirs under tmp_path, to find them (the sandbox's root is made once a process).
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(sandbox, "scratch_root", lambda: tmp_path)
    settings = Settings(device="cpu", **{**FAST, "timeout_s": 600})
    specs = [EvalSpec(TINY_PROBLEM, CANDIDATES / "hang.py", settings, build_cache) for _ in range(2)]

    def workers() -> set[str]:
        """Run dirs of live workers (a sandboxed one shows twice: bwrap and the worker in it)."""
        found = subprocess.run(["pgrep", "-af", f"kbharness.execution.worker {tmp_path}"], capture_output=True, text=True)
        return {line.split()[-1] for line in found.stdout.splitlines()}

    seen = {}

    def interrupt_once_both_run() -> None:
        deadline = time.monotonic() + 60
        while len(workers()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        seen.update(running=len(workers()), at=time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored
    try:
        threading.Thread(target=interrupt_once_both_run, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            list(LocalBackend(workers=2).run(specs))
    finally:
        signal.signal(signal.SIGINT, previous)
    # Killed at once, not left to their 600 s limit.
    assert seen["running"] == 2 and time.monotonic() - seen["at"] < 60
    # A sandboxed worker dies with its namespace's first process, a moment after the pool returns.
    deadline = time.monotonic() + 5
    while workers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workers() == set()
