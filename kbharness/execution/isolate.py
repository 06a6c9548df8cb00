"""Running one evaluation in a child process with a wall-clock limit.

The parent never imports candidate code. Whatever the child does (hang, segfault, abort,
corrupt its CUDA context, exhaust memory), the parent gets a record with a verdict and
the log's tail, and the run goes on with a fresh process for the next candidate.
The child runs in the bwrap sandbox (``sandbox``) unless the caller opts out.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from kbharness.boundary import confine
from kbharness.execution import forkserver, sandbox, worker
from kbharness.common.buildcache import WAIT_PHASE, entry_dir
from kbharness.common.problems import problem_from_path
from kbharness.common.results import EvalRecord, Verdict
from kbharness.common.spec import EvalSpec

POLL_S = 0.1
_CUDA_FAULT = ("illegal memory access", "CUDA error", "device-side assert", "unspecified launch failure")
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)


class Stopped(Exception):
    """The caller asked the evaluation to stop (``stop`` was set); its worker is killed."""


def run_isolated(spec: EvalSpec, gpu: int | None = None, stop: threading.Event | None = None,
                 sandboxed: bool | None = None) -> EvalRecord:
    """Evaluate in a fresh worker; a compile gets ``compile_timeout_s``, the rest ``timeout_s``.

    With ``gpu``, the worker sees only that GPU (it becomes its ``cuda:0``). ``stop`` lets a
    thread other than the caller's end the evaluation (an interrupted multi-GPU run): the
    worker is killed and ``Stopped`` raised. ``sandboxed`` (default: ``sandbox.wanted()``)
    runs the worker in the sandbox; ``sandbox.SandboxError`` when it cannot be made."""
    box = None
    if sandbox.wanted(sandboxed):
        sandbox.check()
        Path(spec.cache_dir).mkdir(parents=True, exist_ok=True)
        readable = (os.getcwd(), *filter(None, [spec.settings.ceilings_file]))  # one per run: one fork server
        box = sandbox.Sandbox(writable=(str(sandbox.scratch_root()), str(spec.cache_dir)), readable=readable)
    run_dir = Path(tempfile.mkdtemp(prefix="kb-", dir=box and sandbox.scratch_root()))
    env = child_env(gpu)
    if box:
        env = sandbox.environment(env, run_dir / "home")
    (run_dir / "spec.json").write_text(_visible_spec(spec, run_dir).to_json() if box else spec.to_json())
    key = secrets.token_bytes(32)
    (run_dir / worker.KEY_FILE).write_text(key.hex())
    log_path = run_dir / "log.txt"
    started = time.monotonic()
    proc = _start_worker(run_dir, log_path, env, box, spec)
    try:
        timed_out_in = _wait(proc, run_dir, spec, stop)
    except BaseException:
        kill_group(proc)
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    result = run_dir / "result.json"
    log_text = log_path.read_text(errors="replace")
    returncode = sandbox.exit_code(proc.returncode) if box and isinstance(proc, subprocess.Popen) else proc.returncode
    if timed_out_in is None and result.exists() and not _signed(run_dir, key) and returncode == 0:
        record = failure_record(spec, Verdict.INCORRECT, "record integrity: the result.json in the run folder was not "
                                "written by the judge (no valid signature): the candidate forged its record",
                                log_text, time.monotonic() - started)
    elif timed_out_in is None and result.exists() and returncode == 0:
        record = EvalRecord.from_dict(json.loads(result.read_text()))
        if box:
            record = replace(record, problem_path=str(spec.problem_path), solution_path=str(spec.solution_path))
    else:
        verdict, message = _classify_death(returncode, timed_out_in, log_text, spec, _last_phase(run_dir))
        record = failure_record(spec, verdict, message, log_text, time.monotonic() - started)
    shutil.rmtree(run_dir, ignore_errors=True)
    return record


def _signed(run_dir: Path, key: bytes) -> bool:
    try:
        text, signature = (run_dir / "result.json").read_bytes(), (run_dir / worker.SIGNATURE_FILE).read_text()
    except OSError:
        return False
    return hmac.compare_digest(signature, worker.sign(key, text))


def _visible_spec(spec: EvalSpec, run_dir: Path) -> EvalSpec:
    """``spec`` with a problem or candidate the sandbox hides (under /tmp or the home) copied
    into the run folder, under its folder's name (a problem's key is made of it). The record
    gets the original paths back."""
    paths = {}
    for field in ("problem_path", "solution_path"):
        path = Path(getattr(spec, field))
        if sandbox.hidden(path):
            copy = run_dir / field / path.parent.name / path.name
            copy.parent.mkdir(parents=True)
            shutil.copyfile(path, copy)
            paths[field] = copy
    return replace(spec, **paths)


def _start_worker(run_dir: Path, log_path: Path, env: dict[str, str], box: sandbox.Sandbox | None, spec: EvalSpec):
    """A fresh worker process, forked from the fork server (torch already imported) unless
    ``KB_FORKSERVER=0`` or the server cannot start; else started from scratch. Sandboxed,
    the server runs in ``box``, a worker started from scratch in a sandbox of its own, which
    may write only its run folder and its candidate's cache entry."""
    entry = _own_entry(spec) if box else ()
    if os.environ.get("KB_FORKSERVER", "1") != "0":
        server = forkserver.shared(child_env(), box)
        if server is not None:
            if box:  # the server's sandbox is everyone's: the runner keeps only its own folders writable
                env = {**env, confine.ENV: _corner(entry, box.writable, box, spec)}
            try:
                return server.spawn(str(run_dir), str(log_path), env)
            except OSError:
                pass
    argv = [sys.executable, "-m", "kbharness.execution.worker", str(run_dir)]
    if box:
        argv = replace(box, writable=(str(run_dir), *entry)).wrap(argv)
        env = {**env, confine.ENV: _corner(entry, (str(run_dir),), box, spec)}
    with open(log_path, "wb") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)


def _corner(entry: tuple[str, ...], writable: tuple[str, ...], box: sandbox.Sandbox, spec: EvalSpec) -> str:
    """What the runner keeps writable (its cache entry; its scratch folder is added by the
    judge) and every writable mount of the sandbox, which it makes read-only for itself: the
    bound folders, and the tmpfs mounts (``/tmp``, the homes, ``/dev/shm``) that the judge and,
    in the fork server's sandbox, every other evaluation share; and whether it has a PID
    namespace of its own (not on the GPU, where CUDA refuses one: see ``confine``)."""
    locked = [os.path.realpath(p) for p in writable] + list(box.hidden) + ["/dev/shm"]
    return json.dumps({"writable": [os.path.realpath(p) for p in entry], "locked": list(dict.fromkeys(locked)),
                       "pid_namespace": _runner_pid_namespace(spec)})


def _runner_pid_namespace(spec: EvalSpec) -> bool:
    return not spec.settings.device.startswith("cuda")


def _own_entry(spec: EvalSpec) -> tuple[str, ...]:
    """The candidate's cache entry, made here so it can be bound writable alone; none for a
    candidate without code or that cannot be read (the worker says why)."""
    from kbharness.common.loading import LoadError, read_solution

    try:
        source = read_solution(Path(spec.solution_path))
    except LoadError:
        return ()
    if source.code is None:
        return ()
    entry = entry_dir(Path(spec.cache_dir), source.code, spec.settings.device)
    entry.mkdir(parents=True, exist_ok=True)
    return (str(entry),)


def _wait(proc: subprocess.Popen | forkserver.ForkedWorker, run_dir: Path, spec: EvalSpec,
          stop: threading.Event | None) -> str | None:
    """Wait for the worker; on a limit, kill it and return the phase it was stuck in."""
    settings = spec.settings
    phase_file = run_dir / "phase"
    phase, phase_started = "start", time.monotonic()
    while not _ended_within(proc, POLL_S):
        if stop is not None and stop.is_set():
            raise Stopped
        try:
            current = phase_file.read_text()
        except OSError:
            current = phase
        if current != phase:
            phase, phase_started = current, time.monotonic()
        limit = settings.compile_timeout_s if phase in ("build", WAIT_PHASE) else settings.timeout_s
        if time.monotonic() - phase_started > limit:
            kill_group(proc)
            return phase
    return None


def _ended_within(proc: subprocess.Popen | forkserver.ForkedWorker, seconds: float) -> bool:
    """Whether the worker ends within ``seconds``, known the moment it does (a sweep of small
    problems lost half a poll, 50 ms, an evaluation)."""
    try:
        return proc.wait(seconds) is not None
    except subprocess.TimeoutExpired:
        return False


def kill_group(proc: subprocess.Popen | forkserver.ForkedWorker) -> None:
    """Kill a child started in its own session, with everything it spawned (compilers included).
    One already reaped is left alone: its pid may belong to another process by now."""
    if proc.poll() is None:
        forkserver.kill_worker(proc.pid)
    proc.wait()


def _last_phase(run_dir: Path) -> str:
    try:
        return (run_dir / "phase").read_text()
    except OSError:
        return ""


def _classify_death(returncode: int, timed_out_in: str | None, log: str, spec: EvalSpec,
                    last_phase: str = "") -> tuple[Verdict, str]:
    s = spec.settings
    killed = returncode == -signal.SIGKILL
    if timed_out_in is None and last_phase == "reference" and ("out of memory" in log.lower() or killed):
        # No candidate code exists yet in this phase: memory the reference alone needs (the host's
        # OOM killer sends SIGKILL) is the machine's limit, never the candidate's.
        return Verdict.TOO_LARGE, ("the worker ran out of memory (or was killed) running the reference, before "
                                   "the candidate was loaded")
    if timed_out_in == "build":
        return Verdict.COMPILE_TIMEOUT, f"build still running after {s.compile_timeout_s:g} s"
    if timed_out_in == WAIT_PHASE:
        return Verdict.LOST, (f"gave up after {s.compile_timeout_s:g} s waiting for another process's build of "
                              "this candidate; not its verdict, so not stored")
    if timed_out_in is not None:
        return Verdict.TIMEOUT, f"no result after {s.timeout_s:g} s in phase '{timed_out_in}'"
    if any(marker in log for marker in _CUDA_FAULT):
        return Verdict.CUDA_ERROR, "worker died after a CUDA error; its context is gone"
    if "out of memory" in log.lower():
        return Verdict.OOM, "worker ran out of memory"
    if returncode < 0:
        name = signal.Signals(-returncode).name
        return Verdict.CRASH, f"worker killed by {name}"
    return Verdict.CRASH, f"worker exited with code {returncode} without a result"


def failure_record(spec: EvalSpec, verdict: Verdict, message: str, log: str, wall_s: float) -> EvalRecord:
    try:
        sha = hashlib.sha256(Path(spec.solution_path).read_bytes()).hexdigest()
    except OSError:
        sha = ""
    return EvalRecord(
        problem=problem_from_path(spec.problem_path).key,
        problem_path=str(spec.problem_path),
        solution_path=str(spec.solution_path),
        solution_sha256=sha,
        verdict=verdict,
        message=message,
        log_tail="\n".join(log.strip().splitlines()[-40:]),
        settings=spec.settings.to_dict(),
        settings_key=spec.settings.key(),
        env={"device": spec.settings.device},
        wall_s=wall_s,
        timestamp_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


def child_env(gpu: int | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if gpu is not None:
        visible = [d for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
        env["CUDA_VISIBLE_DEVICES"] = visible[gpu] if gpu < len(visible) else str(gpu)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    # The judge and the runner take turns: OpenMP threads left spinning by the one that just
    # ran a parallel region took the other's cores while it was timed (on two cores, KernelBench's
    # LSTM against itself ran 1.06-1.12x slower in the runner, a 512 matmul 1.09-1.38x with
    # spreads of +-0.4; passive, 0.97-1.08x and 0.98-1.15x +-0.05).
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env
