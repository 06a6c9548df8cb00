"""Many evaluations: resuming from the store, and an interrupted run that loses nothing."""
import json
import os
import signal
import subprocess
import sys
import time

from conftest import CANDIDATES, FAST, FIXTURES, ROOT, TINY_PROBLEM
from kbharness.common.problems import problem_from_path
from kbharness.common.results import Verdict
from kbharness.orchestration.jobs import Job, evaluate_jobs
from kbharness.common.spec import Settings
from kbharness.orchestration.store import Store


def test_second_run_takes_results_from_the_store_unless_forced(tmp_path, build_cache):
    store = Store(tmp_path / "evals.jsonl")
    problem = problem_from_path(TINY_PROBLEM)
    jobs = [Job(problem, CANDIDATES / "correct.py"), Job(problem, CANDIDATES / "wrong.py")]
    settings = Settings(device="cpu", **FAST)
    first = evaluate_jobs(jobs, settings, store, build_cache)
    assert [o.from_store for o in first] == [False, False]
    again = evaluate_jobs(jobs, settings, store, build_cache)
    assert [o.from_store for o in again] == [True, True]
    assert [o.record for o in again] == [o.record for o in first]
    assert len(store.records()) == 2
    other = Settings(device="cpu", **{**FAST, "seed": 7})
    assert [o.from_store for o in evaluate_jobs(jobs[:1], other, store, build_cache)] == [False]
    forced = evaluate_jobs(jobs, settings, store, build_cache, force=True)
    assert [o.from_store for o in forced] == [False, False]
    assert len(store.records()) == 5


def test_interrupted_run_keeps_finished_records_and_resumes(tmp_path, build_cache):
    store = tmp_path / "evals.jsonl"
    fast = ["--device", "cpu", "--trials", "3", "--runs", "10", "--warmup", "1", "--time-budget", "1", "-q"]
    cmd = [sys.executable, "-m", "kbharness.cli", "run", "1/1", "--problems-dir", str(FIXTURES / "problems"),
           "--solution", str(CANDIDATES / "correct.py"), "--solution", str(CANDIDATES / "hang.py"),
           "--store", str(store), "--cache-dir", str(build_cache), *fast]
    # Plain worker starts with their run dirs under tmp_path, so the hanging one can be found by name.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KB_FORKSERVER": "0", "TMPDIR": str(tmp_path)}

    def workers() -> bytes:
        return subprocess.run(["pgrep", "-f", f"kbharness.execution.worker {tmp_path}"], capture_output=True).stdout

    # A shell without job control starts background jobs with SIGINT ignored, and Python keeps
    # an inherited SIG_IGN: give the run the default, as a terminal's Ctrl-C would find it.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not (store.exists() and store.read_text().count("\n") == 1):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    while not workers():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "interrupted; every finished evaluation is in the store" in err
    lines = store.read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["verdict"] == "correct"
    assert workers() == b""

    rerun = [str(CANDIDATES / "wrong.py") if c.endswith("hang.py") else c for c in cmd]
    resumed = subprocess.run(rerun, capture_output=True, text=True, env=env, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert "1 of 2 results are from" in resumed.stdout
    assert [json.loads(x)["verdict"] for x in store.read_text().splitlines()] == ["correct", "incorrect"]


def test_candidates_are_evaluated_as_their_builds_finish(tmp_path, build_cache):
    from kbharness.orchestration.build import BuildPool
    from kbharness.orchestration.jobs import _in_build_order

    problem = problem_from_path(TINY_PROBLEM)
    jobs = [Job(problem, CANDIDATES / "hang_in_build.py"), Job(problem, CANDIDATES / "correct.py")]
    start = time.monotonic()
    order = _in_build_order(jobs, [0, 1], Settings(device="cuda", compile_timeout_s=20, **FAST),
                            BuildPool("cuda", build_cache, 2, 20))
    assert next(order) == 1 and time.monotonic() - start < 15  # the GPU need not wait for the hung build
    assert next(order) == 0 and time.monotonic() - start >= 20  # the hung build was killed at its limit


def test_a_sweep_with_builders_gives_each_failure_its_verdict(tmp_path, build_cache):
    problem = problem_from_path(TINY_PROBLEM)
    names = ["hang_in_build.py", "correct.py", "syntax_error.py"]
    jobs = [Job(problem, CANDIDATES / n) for n in names]
    settings = Settings(device="cpu", compile_timeout_s=10, **FAST)
    store = Store(tmp_path / "s.jsonl")
    outcomes = evaluate_jobs(jobs, settings, store, build_cache, build_jobs=3)
    assert [o.record.verdict for o in outcomes] == [Verdict.COMPILE_TIMEOUT, Verdict.CORRECT, Verdict.LOAD_ERROR]
    stored = [r.solution_path.split("/")[-1] for r in store]
    assert stored[-1] == "hang_in_build.py"  # evaluated once every quicker build was done
