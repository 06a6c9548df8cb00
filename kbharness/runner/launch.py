"""The runner's process: forked, confined, then serving its judge.

``start`` forks the runner at the top of the worker, while that process has no CUDA context
and knows nothing of the evaluation: the runner's copy of its memory holds no reference
output, seed or key. In a sandbox the runner then confines itself (``confine``): a user and
mount namespace of its own (and a PID namespace on the CPU), where only its scratch folder
and its candidate's cache entry are writable, and a filter on the signals it may send. The
judge makes itself undumpable, so that its memory cannot be read through ``/proc`` or
ptrace either.
"""
from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import tempfile
from pathlib import Path

from kbharness.boundary import wire
from kbharness.boundary.runner_client import Runner

_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE = 1, 4


def start(scratch: Path, corner: dict | None) -> "Runner":
    """Fork the runner now. ``corner`` (from the sandbox: ``writable``, ``locked``) confines
    it; without one it runs as this process's plain child."""
    scratch.mkdir(parents=True, exist_ok=True)
    ours, theirs = wire.pair()
    pid = os.fork()
    if pid == 0:
        ours.close()
        _runner_process(theirs, scratch, corner)
    theirs.close()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    return Runner(ours, pid)


def _runner_process(sock: socket.socket, scratch: Path, corner: dict | None) -> None:
    """Never returns. Confined: this process stays outside, as the PID namespace's parent
    that passes on how the runner ended; its child is the namespace's init, whose own child
    (pid 2, so that signals it sends itself are not ignored as an init's) serves."""
    code = 1
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # neither the candidate nor another runner reads this one
        notes: tuple[str, ...] = ()
        if corner is not None:
            from kbharness.boundary import confine

            pid_namespace = corner["pid_namespace"]
            own_pids = False
            try:
                confine.confine(writable=[str(scratch), *corner["writable"]], locked=corner["locked"],
                                pid_namespace=pid_namespace)
            except OSError as e:
                notes = (f"runner not confined to its scratch folder and cache entry, and in the judge's PID "
                         f"namespace ({e}): it could write other evaluations' files and signal the judge",)
            else:
                if pid_namespace:
                    _pass_on(os.fork(), sock, libc)  # this process: parent of the namespace
                    _pass_on(os.fork(), sock, libc, init=True)  # the namespace's init
                    confine.enter_pid_namespace()
                    own_pids = True
                else:
                    confine.drop_capabilities(libc)
            filtered = False
            try:
                confine.forbid_signals(libc)
                filtered = True
            except OSError as e:
                notes += (f"runner's signals not filtered ({e})" + ("" if own_pids else ": it could signal the judge"),)
            try:
                confine.scope_signals(libc)
            except OSError as e:
                if not own_pids:  # in its own PID namespace the judge has no pid to name
                    notes += (f"runner's signals not scoped by Landlock ({e})" + (
                        ": the signal filter alone guards the judge, and lets through a thread it starts later"
                        if filtered else ""),)
        os.environ.update({"HOME": str(scratch), "TMPDIR": str(scratch), "TORCHINDUCTOR_CACHE_DIR": str(scratch / "inductor")})
        tempfile.tempdir = str(scratch)  # the judge's, inherited, is read-only here
        from kbharness.runner import candidate_runner

        # Confined, the runner builds into the one entry the sandbox left it writable.
        entry = corner["writable"][0] if corner and corner["writable"] else None
        candidate_runner.main(sock, notes, entry)
        code = 0
    except BaseException:  # noqa: BLE001  (the runner's own failure: the judge reads the log)
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _pass_on(child: int, sock: socket.socket, libc, init: bool = False) -> None:
    """In the parent of a fork (``child`` > 0): wait for the child, reaping every orphan as an
    init must, then end as it ended. Returns in the child."""
    if child == 0:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        return
    sock.close()
    while True:
        try:
            pid, status = os.waitpid(-1 if init else child, 0)
        except ChildProcessError:
            os._exit(1)
        if pid == child:
            break
    if os.WIFSIGNALED(status) and not init:
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    # An init cannot die of a signal it sends itself: it tells its parent by exit code.
    os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
