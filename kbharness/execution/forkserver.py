"""Starting workers without paying for torch's import every time.

Every evaluation gets a fresh process (see ``isolate``), and most of a fresh process's
start is importing torch and the harness: about 4 s on a 2-core machine and 10 s on the
H100 machine, against 2-4 s of actual evaluation. The fork server imports all that once,
never touching the GPU, then forks one worker per evaluation. A worker is still its own
process in its own session, with its own CUDA context created after the fork; nothing a
candidate does reaches the server or the next worker.

Sandboxed (``sandbox``), the server runs inside bwrap and every worker inherits its
sandbox at no cost of its own; the pids it reports are then its PID namespace's, and the
client looks up each worker's pid on the host, where it kills and waits.

Protocol, one JSON object per line: the client sends ``{"id", "run_dir", "log", "env",
"cwd"}``; the server answers ``{"ready": true}`` once, then ``{"id", "pid"}`` when a worker
is forked and ``{"id", "exit"}`` (a ``Popen.returncode``) when it ends.
"""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import threading

from kbharness.execution.sandbox import INSIDE, Sandbox

POLL_S = 0.02


def serve() -> None:
    import torch

    import kbharness.judge.evaluate  # noqa: F401  (what every worker imports, bound before any candidate exists)
    from kbharness.execution import worker

    if torch.cuda.is_initialized():
        raise SystemExit("fork server: CUDA initialized during import; workers must create their own context")
    if os.environ.get(INSIDE):
        _not_dumpable()
    out = os.fdopen(os.dup(1), "w", buffering=1)
    out.write(json.dumps({"ready": True}) + "\n")
    pending: dict[int, int] = {}
    buf = b""
    stdin_open = True
    while stdin_open or pending:
        if stdin_open:
            readable, _, _ = select.select([0], [], [], POLL_S)
            if readable:
                chunk = os.read(0, 1 << 16)
                stdin_open = bool(chunk)
                if not stdin_open:
                    _kill_all(pending)
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in filter(None, lines):
                    request = json.loads(line)
                    pid = _fork_worker(request, worker.main)
                    pending[pid] = request["id"]
                    out.write(json.dumps({"id": request["id"], "pid": pid}) + "\n")
        else:
            select.select([], [], [], POLL_S)
        while pending:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            out.write(json.dumps({"id": pending.pop(pid), "exit": os.waitstatus_to_exitcode(status)}) + "\n")


def _not_dumpable() -> None:
    """Workers of one sandbox share its PID namespace: a non-dumpable server (and every worker
    forked from it) cannot be ptraced, nor its memory read, by a candidate without capabilities."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def _kill_all(pending: dict[int, int]) -> None:
    """The client closed or died: nobody is left to enforce its workers' time limits or read
    their results, so a worker still running (a hanging candidate) would run forever."""
    for pid in pending:
        kill_worker(pid)


def kill_worker(pid: int) -> None:
    """SIGKILL a worker and everything it spawned. A worker forked an instant ago may not
    have made its own session yet: then there is no group of that id, and the pid is killed.
    No pid (a sandboxed worker that ended before its host pid was found) is left alone."""
    if pid <= 0:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    except PermissionError:
        pass
    kill_session(pid)


def kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid`` but the caller. Killing the worker's group is
    not enough: ninja starts each compiler in a process group of its own, and those ran on
    with parent pid 1 after an interrupted build. Linux only (``/proc``); elsewhere a no-op."""
    me, own_group = os.getpid(), os.getpgrp()
    for _ in range(3):  # a process killed between two scans may have forked once more
        members = _session_members(sid)
        for pid, group in members:
            try:
                if group != own_group:
                    os.killpg(group, signal.SIGKILL)
                elif pid != me:
                    os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if all(pid == me for pid, _ in members):
            return


def _session_members(sid: int) -> list[tuple[int, int]]:
    """(pid, process group) of every live process of session ``sid``."""
    members = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return members
    for name in filter(str.isdigit, names):
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state, _, group, session = f.read().rsplit(b")", 1)[1].split()[:4]
        except (OSError, ValueError):
            continue
        if int(session) == sid and state != b"Z":
            members.append((int(name), int(group)))
    return members


def _fork_worker(request: dict, main) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.closerange(3, 1 << 16)
        try:
            os.chdir(request["cwd"])
        except OSError:  # the caller's directory is hidden by the sandbox
            os.chdir(request["run_dir"])
        os.environ.clear()
        os.environ.update(request["env"])
        code = main(request["run_dir"])
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


class ForkedWorker:
    """The part of ``subprocess.Popen`` that ``isolate`` uses, for a worker forked by the server."""

    def __init__(self) -> None:
        self.pid = 0
        self.forked = False
        self.returncode: int | None = None
        self._started = threading.Event()
        self._ended = threading.Event()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        """Its exit status, once it has ended; None when ``timeout`` passes first."""
        self._ended.wait(timeout)
        return self.returncode


class ForkServer:
    """One server per parent process, shared by its threads (one per GPU in a sweep)."""

    def __init__(self, env: dict[str, str], box: Sandbox | None = None):
        argv = [sys.executable, "-m", "kbharness.execution.forkserver"]
        self._proc = subprocess.Popen(box.wrap(argv) if box else argv, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                      start_new_session=True)
        self._sandboxed = box is not None
        self._host_pid = self._proc.pid
        self._lock = threading.Lock()
        self._workers: dict[int, ForkedWorker] = {}
        self._next_id = 0
        self._ready = threading.Event()
        self.alive = True
        threading.Thread(target=self._read, daemon=True).start()

    def spawn(self, run_dir: str, log: str, env: dict[str, str]) -> ForkedWorker:
        worker = ForkedWorker()
        with self._lock:
            if not self.alive:
                raise OSError("fork server is gone")
            self._next_id += 1
            self._workers[self._next_id] = worker
            request = {"id": self._next_id, "run_dir": run_dir, "log": log, "env": env, "cwd": os.getcwd()}
            self._proc.stdin.write((json.dumps(request) + "\n").encode())
            self._proc.stdin.flush()
        worker._started.wait()
        if not worker.forked:
            raise OSError("fork server is gone")
        return worker

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout) and self.alive

    def close(self) -> None:
        with self._lock:
            self.alive = False
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        self._proc.wait()

    def _read(self) -> None:
        for line in self._proc.stdout:
            message = json.loads(line)
            if message.get("ready"):
                if self._sandboxed:  # bwrap, its init (pid 1 inside), the server
                    init = next(iter(_children(self._proc.pid).values()), -1)
                    self._host_pid = next(iter(_children(init).values()), -1)
                self._ready.set()
                continue
            with self._lock:
                worker = self._workers[message["id"]]
                if "pid" in message:
                    worker.pid = _children(self._host_pid).get(message["pid"], -1) if self._sandboxed \
                        else message["pid"]
                    worker.forked = True
                    worker._started.set()
                else:
                    worker.returncode = message["exit"]
                    del self._workers[message["id"]]
                    worker._ended.set()
        self._gone()

    def _gone(self) -> None:
        """The server died: its workers can no longer be reaped by it, so they are killed."""
        with self._lock:
            self.alive = False
            self._ready.set()
            for worker in self._workers.values():
                if worker.pid:
                    kill_worker(worker.pid)
                worker.returncode = -9
                worker._started.set()
                worker._ended.set()
            self._workers.clear()


def _children(ppid: int) -> dict[int, int]:
    """The live children of host pid ``ppid``: their pid in their own (innermost) PID namespace
    to their pid here. Read from ``/proc/*/status``, which every user may read."""
    found = {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/status") as f:
                fields = dict(line.split(":", 1) for line in f if line.startswith(("PPid:", "NSpid:")))
        except (OSError, ValueError):
            continue
        if int(fields.get("PPid", "0")) == ppid:
            found[int(fields.get("NSpid", name).split()[-1])] = int(name)
    return found


_servers: dict[Sandbox | None, ForkServer] = {}
_failed: set[Sandbox | None] = set()
_server_lock = threading.Lock()
READY_TIMEOUT_S = 120.0


def shared(env: dict[str, str], box: Sandbox | None = None) -> ForkServer | None:
    """This process's fork server for sandbox ``box`` (None: unsandboxed), started on first use
    (and again if it died); None when it could not start, and from then on (the caller then
    starts plain processes)."""
    with _server_lock:
        if box in _failed:
            return None
        server = _servers.get(box)
        if server is None or not server.alive:
            server = _servers[box] = ForkServer(env, box)
            atexit.register(server.close)
        if not server.wait_ready(READY_TIMEOUT_S):
            server._proc.kill()
            _failed.add(box)
            return None
        return server


if __name__ == "__main__":
    serve()
