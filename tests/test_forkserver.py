"""The fork server: workers forked from it behave as fresh processes, and its failures fall
back to, or end as, what a plain process would give."""
import os
import signal
import threading
import time

import pytest

from conftest import CANDIDATES, TINY_PROBLEM

from kbharness.execution import forkserver
from kbharness.execution.isolate import child_env
from kbharness.common.results import Verdict

ENV_PROBE = '''
import os
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        raise RuntimeError("visible=" + os.environ.get("CUDA_VISIBLE_DEVICES", "-") + " cwd=" + os.getcwd())
'''


@pytest.mark.parametrize("server", ["1", "0"])
def test_verdicts_are_the_same_forked_or_started_fresh(evaluate, forked, monkeypatch, server):
    monkeypatch.setenv("KB_FORKSERVER", server)
    assert evaluate("correct.py").verdict is Verdict.CORRECT
    assert evaluate("wrong.py").verdict is Verdict.INCORRECT
    crash = evaluate("segfault.py")
    assert crash.verdict is Verdict.CRASH and "SIGSEGV" in crash.message
    assert len(forked) == (3 if server == "1" else 0)


def test_forked_worker_gets_the_callers_environment_and_directory(forked, tmp_path, monkeypatch):
    probe = tmp_path / "probe.py"
    probe.write_text(ENV_PROBE)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.chdir(tmp_path)
    from kbharness.execution.isolate import run_isolated
    from kbharness.common.spec import EvalSpec, Settings

    r = run_isolated(EvalSpec(TINY_PROBLEM, probe, Settings(device="cpu", n_runs=10), tmp_path / "cache"), gpu=3)
    assert r.verdict is Verdict.RUNTIME_ERROR
    assert f"visible=3 cwd={tmp_path}" in r.message + r.log_tail
    assert len(forked) == 1


def test_workers_forked_from_several_threads_at_once_all_report(evaluate, forked):
    verdicts = []
    threads = [threading.Thread(target=lambda: verdicts.append(evaluate("correct.py").verdict)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert verdicts == [Verdict.CORRECT] * 4
    assert len(forked) == 4


def test_a_dead_server_ends_its_workers_and_the_next_one_starts(tmp_path):
    server = forkserver.ForkServer(child_env())
    assert server.wait_ready(120)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "spec.json").write_text("{not json")
    worker = server.spawn(str(run_dir), str(tmp_path / "log.txt"), dict(os.environ))
    assert worker.wait() == 1  # the worker's own failure comes back as its exit code
    assert "Traceback" in (tmp_path / "log.txt").read_text()

    (run_dir / "spec.json").unlink()
    os.mkfifo(run_dir / "spec.json")  # reading it blocks: a worker that never ends
    stuck = server.spawn(str(run_dir), str(tmp_path / "log2.txt"), dict(os.environ))
    os.kill(server._proc.pid, signal.SIGKILL)
    assert stuck.wait() == -9
    assert _ended(stuck.pid)
    assert not server.alive
    with pytest.raises(OSError):
        server.spawn(str(run_dir), str(tmp_path / "log3.txt"), dict(os.environ))
    again = forkserver.shared(child_env())
    assert again is not None and again is not server and again.alive


def _ended(pid: int, within_s: float = 5.0) -> bool:
    """Gone, or a zombie nobody reaped yet (a container's init may never reap)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_the_server_is_not_fooled_by_candidates_that_patch_torch(evaluate, forked):
    """Candidate code runs only in the forked worker: the next worker sees a clean torch."""
    assert evaluate("patches_torch.py").verdict is Verdict.INCORRECT
    assert evaluate(CANDIDATES / "correct.py").verdict is Verdict.CORRECT
    assert len(forked) == 2


def test_workers_still_running_when_the_client_closes_are_ended(tmp_path):
    """An interrupted run may leave a worker it never learned the pid of; closing must not
    wait for it forever."""
    server = forkserver.ForkServer(child_env())
    assert server.wait_ready(120)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    os.mkfifo(run_dir / "spec.json")  # reading it blocks: a worker that never ends
    stuck = server.spawn(str(run_dir), str(tmp_path / "log.txt"), dict(os.environ))
    closing = threading.Thread(target=server.close, daemon=True)
    closing.start()
    closing.join(30)
    assert not closing.is_alive()
    assert _ended(stuck.pid)


def test_workers_openmp_threads_sleep_between_turns_unless_the_user_says_otherwise(monkeypatch):
    """Judge and runner alternate: threads spinning in the idle one would slow the timed one."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert child_env()["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert child_env()["OMP_WAIT_POLICY"] == "ACTIVE"
