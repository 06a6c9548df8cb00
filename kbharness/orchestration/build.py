"""Filling the build cache ahead of evaluations: candidates built in parallel, each in a fresh
(sandboxed) process with its own time limit, so the GPU evaluates from a warm cache. The
cache's entries and their locks are ``buildcache``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

from kbharness.common.buildcache import WAIT_PHASE, entry_dir, prepare_build_env


def entry_of(solution: Path, device: str, cache_dir: Path) -> Path | None:
    """The entry a candidate builds into for ``device``; None for a completion without code."""
    from kbharness.common.loading import read_solution

    source = read_solution(solution)
    return None if source.code is None else entry_dir(cache_dir, source.code, device)


@dataclass(frozen=True)
class BuildResult:
    solution: str
    ok: bool
    seconds: float
    message: str = ""
    cached: bool = False


def build_candidate(solution: str, device: str, cache_dir: str, problem: str = "", precision: str = "fp32") -> BuildResult:
    """Import a candidate once so its extensions land in the cache; runs in a pool worker.
    A lazy language's kernels are compiled too when the candidate's ``problem`` is known
    (``prewarm``). It is ``cached`` when its entry had compiled code and none was rebuilt."""
    import tempfile

    from kbharness.common.loading import LoadError, load_model_new, read_solution

    start = time.perf_counter()
    try:
        source = read_solution(Path(solution))
        if source.code is None:
            return BuildResult(solution, False, 0.0, f"no code: {source.reason}")
        if source.needs_cuda and not device.startswith("cuda"):
            return BuildResult(solution, False, 0.0, "needs CUDA; not built for the CPU")
        needs = source.language.needs()
        if needs:
            return BuildResult(solution, False, 0.0, f"{needs}; not built")
        entry = prepare_build_env(Path(cache_dir), source.code, device)
        before = _compiled(entry)
        with tempfile.TemporaryDirectory() as scratch:
            model_new = load_model_new(source, Path(scratch), phase=lambda p: print(json.dumps({"phase": p}), flush=True))
    except LoadError as e:
        return BuildResult(solution, False, time.perf_counter() - start, str(e))
    ok, message = True, ""
    if source.language.lazy and problem:
        ok, message = _compile_kernels(model_new, problem, device, precision, source.language)
    after = _compiled(entry)
    return BuildResult(solution, ok, time.perf_counter() - start, message, cached=ok and bool(after) and after == before)


def _compile_kernels(model_new: type, problem: str, device: str, precision: str, lang) -> tuple[bool, str]:
    """A lazy language's kernels compiled for the problem's shapes: whether they compiled
    (a compile error fails the build), and why they were not when they were not."""
    from kbharness.orchestration import prewarm
    from kbharness.common.spec import DTYPES

    try:
        prewarm.compile_kernels(model_new, Path(problem), device, DTYPES[precision], lang)
    except prewarm.NotWarmed as e:
        return True, f"{lang.label} kernels left to the evaluation's first call: {e}"
    except Exception as e:  # only the language's own errors come through
        return False, f"compile error: {lang.describe(e)}"
    return True, ""


def _compiled(entry: Path) -> dict[str, int]:
    """Each compiled artefact of an entry (extensions, Triton kernels) and its modification time (ns)."""
    return {str(p): p.stat().st_mtime_ns for p in [*entry.glob("*/*.so"), *entry.glob("triton/*/*.cubin")]}


def build_all(solutions: list[Path], device: str, cache_dir: Path, jobs: int,
              timeout_s: float = 900.0, sandboxed: bool | None = None,
              problems: dict[str, Path] | None = None) -> Iterator[BuildResult]:
    """Build candidates in parallel, each in a fresh process with its own time limit,
    yielding results as they finish (``BuildPool.run``)."""
    yield from BuildPool(device, cache_dir, jobs, timeout_s, sandboxed).run(solutions, problems)


class BuildPool:
    """Compilation is CPU-bound and dominates a cold evaluation, so building ``jobs`` at a
    time lets the (one) GPU evaluate from a warm cache; a build that hangs is killed with
    its compiler processes and costs only its own slot. ``cancel`` (an interrupted sweep)
    kills the running builds and skips the rest, so no compiler outlives the sweep.
    Sandboxed (``sandboxed``, default ``sandbox.wanted()``), each build may write only its
    own cache entry (``_sandbox``). A candidate whose problem ``run`` is told also has its
    lazy language's kernels compiled, for that problem's shapes in ``precision``."""

    def __init__(self, device: str, cache_dir: Path, jobs: int, timeout_s: float = 900.0,
                 sandboxed: bool | None = None, precision: str = "fp32"):
        from kbharness.execution import sandbox

        self.device, self.cache_dir, self.jobs, self.timeout_s = device, str(cache_dir), max(1, jobs), timeout_s
        self.precision = precision
        self.sandboxed = sandbox.wanted(sandboxed)
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self._cancelled = False

    def run(self, solutions: list[Path], problems: dict[str, Path] | None = None) -> Iterator[BuildResult]:
        """``problems`` maps a solution (as given) to its problem's file."""
        pool = ThreadPoolExecutor(max_workers=self.jobs)
        try:
            futures = [pool.submit(self._build_in_child, str(s), str((problems or {}).get(str(s), "")))
                       for s in solutions]
            for future in as_completed(futures):
                yield future.result()
        finally:
            self.cancel()
            pool.shutdown(wait=True, cancel_futures=True)

    def cancel(self) -> None:
        from kbharness.execution.isolate import kill_group

        with self._lock:
            self._cancelled = True
            running = list(self._running)
        for proc in running:
            kill_group(proc)

    def _sandbox(self, solution: str, problem: str, env: dict[str, str]):
        """A build's sandbox, writing only the candidate's entry (made here, keyed as the child
        will key it), reading the candidate and its problem where the sandbox would hide them;
        and its env."""
        from kbharness.execution import sandbox
        from kbharness.common.loading import LoadError

        sandbox.check()
        try:
            entry = entry_of(Path(solution), self.device, Path(self.cache_dir))
        except LoadError:
            entry = None  # unreadable: the child says so
        if entry is not None:
            entry.mkdir(parents=True, exist_ok=True)
        box = sandbox.Sandbox(writable=(str(entry),) if entry else (), readable=(solution, problem) if problem else (solution,))
        return box, {**env, "HOME": "/tmp", "TMPDIR": "/tmp"}

    def _build_in_child(self, solution: str, problem: str) -> BuildResult:
        from kbharness.execution.isolate import child_env, kill_group

        start = time.perf_counter()
        cmd, env = [sys.executable, "-m", "kbharness.orchestration.build", solution, self.device, self.cache_dir], child_env()
        box = None
        if self.sandboxed:
            box, env = self._sandbox(solution, problem, env)
        with self._lock:
            if self._cancelled:
                return BuildResult(solution, False, 0.0, "build cancelled")
            parent_alive, alive = os.pipe()
            argv = cmd + [str(parent_alive), problem, self.precision]
            proc = subprocess.Popen(box.wrap(argv) if box else argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, text=True, start_new_session=True, env=env,
                                    pass_fds=(parent_alive,))
            self._running.add(proc)
        os.close(parent_alive)
        try:
            out, _ = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            waited = _last_phase(proc.communicate()[0]) == WAIT_PHASE
            return BuildResult(solution, False, time.perf_counter() - start,
                               f"gave up after {self.timeout_s:g} s waiting for another process's build of it"
                               if waited else f"build timed out after {self.timeout_s:g} s")
        finally:
            os.close(alive)
            with self._lock:
                self._running.discard(proc)
        lines = out.strip().splitlines()
        try:
            return BuildResult(**json.loads(lines[-1]))
        except (IndexError, ValueError, TypeError):
            if self._cancelled:
                return BuildResult(solution, False, time.perf_counter() - start, "build cancelled")
            tail = lines[-1] if lines else "no output"
            return BuildResult(solution, False, time.perf_counter() - start,
                               f"build worker died (exit {proc.returncode}): {tail[:300]}")


def _last_phase(output: str) -> str:
    """The last phase a build child announced (``{"phase": ...}`` lines)."""
    phase = ""
    for line in output.splitlines():
        if line.startswith('{"phase": '):
            phase = json.loads(line)["phase"]
    return phase


def _end_with_parent(fd: int) -> None:
    """The pool holds the other end of pipe ``fd`` open while it waits for this build; the
    kernel closes it when the pool's process dies, even by SIGKILL. Then the build is
    nobody's, and it ends with its compilers instead of running on."""
    from kbharness.execution.forkserver import kill_session

    def watch() -> None:
        while os.read(fd, 1):
            pass
        kill_session(os.getsid(0))
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


if __name__ == "__main__":
    _end_with_parent(int(sys.argv[4]))
    print(json.dumps(asdict(build_candidate(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[5], sys.argv[6]))))
