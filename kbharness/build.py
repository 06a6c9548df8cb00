"""Where candidates' extensions are built, so that a second evaluation reuses the build.

``load_inline`` caches by extension *name* in one directory, so two candidates that both
call their extension ``fused_relu`` would rebuild each other every time. Giving every
(candidate source, torch, CUDA, GPU arch) its own directory makes the cache content-keyed:
a repeat evaluation costs ~0.1 s of "compilation", and concurrent builds of the same
candidate are serialized by torch's own lock file in that directory.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

DEFAULT_CACHE_DIR = Path(os.environ.get("KB_CACHE_DIR", Path.home() / ".cache" / "kbharness"))


def build_key(code: str, device: str) -> str:
    import torch

    arch = ""
    if device.startswith("cuda") and torch.cuda.is_available():
        arch = "sm_%d%d" % torch.cuda.get_device_capability(torch.device(device))
    parts = [code, torch.__version__, str(torch.version.cuda), arch, sys.version.split()[0]]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def prepare_build_env(cache_dir: Path, code: str, device: str) -> Path:
    """Point torch's extension builder at this candidate's cache directory; return it."""
    directory = Path(cache_dir) / "extensions" / build_key(code, device)
    directory.mkdir(parents=True, exist_ok=True)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(directory)
    scripts = sysconfig.get_path("scripts")
    path = os.environ.get("PATH", "")
    if scripts and scripts not in path.split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + path
    return directory


@dataclass(frozen=True)
class BuildResult:
    solution: str
    ok: bool
    seconds: float
    message: str = ""


def build_candidate(solution: str, device: str, cache_dir: str) -> BuildResult:
    """Import a candidate once so its extensions land in the cache; runs in a pool worker."""
    import tempfile

    from kbharness.loading import LoadError, load_model_new, read_solution

    start = time.perf_counter()
    try:
        source = read_solution(Path(solution))
        if source.code is None:
            return BuildResult(solution, False, 0.0, f"no code: {source.reason}")
        if source.needs_cuda and not device.startswith("cuda"):
            return BuildResult(solution, False, 0.0, "needs CUDA; not built for the CPU")
        prepare_build_env(Path(cache_dir), source.code, device)
        with tempfile.TemporaryDirectory() as scratch:
            load_model_new(source, Path(scratch))
    except LoadError as e:
        return BuildResult(solution, False, time.perf_counter() - start, str(e))
    return BuildResult(solution, True, time.perf_counter() - start)


def build_all(solutions: list[Path], device: str, cache_dir: Path, jobs: int,
              timeout_s: float = 900.0) -> Iterator[BuildResult]:
    """Build candidates in parallel, each in a fresh process with its own time limit,
    yielding results as they finish (``BuildPool.run``)."""
    yield from BuildPool(device, cache_dir, jobs, timeout_s).run(solutions)


class BuildPool:
    """Compilation is CPU-bound and dominates a cold evaluation, so building ``jobs`` at a
    time lets the (one) GPU evaluate from a warm cache; a build that hangs is killed with
    its compiler processes and costs only its own slot. ``cancel`` (an interrupted sweep)
    kills the running builds and skips the rest, so no compiler outlives the sweep."""

    def __init__(self, device: str, cache_dir: Path, jobs: int, timeout_s: float = 900.0):
        self.device, self.cache_dir, self.jobs, self.timeout_s = device, str(cache_dir), max(1, jobs), timeout_s
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self._cancelled = False

    def run(self, solutions: list[Path]) -> Iterator[BuildResult]:
        pool = ThreadPoolExecutor(max_workers=self.jobs)
        try:
            futures = [pool.submit(self._build_in_child, str(s)) for s in solutions]
            for future in as_completed(futures):
                yield future.result()
        finally:
            self.cancel()
            pool.shutdown(wait=True, cancel_futures=True)

    def cancel(self) -> None:
        from kbharness.isolate import kill_group

        with self._lock:
            self._cancelled = True
            running = list(self._running)
        for proc in running:
            kill_group(proc)

    def _build_in_child(self, solution: str) -> BuildResult:
        from kbharness.isolate import child_env, kill_group

        start = time.perf_counter()
        cmd = [sys.executable, "-m", "kbharness.build", solution, self.device, self.cache_dir]
        with self._lock:
            if self._cancelled:
                return BuildResult(solution, False, 0.0, "build cancelled")
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    text=True, start_new_session=True, env=child_env())
            self._running.add(proc)
        try:
            out, _ = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            return BuildResult(solution, False, time.perf_counter() - start,
                               f"build timed out after {self.timeout_s:g} s")
        finally:
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


if __name__ == "__main__":
    print(json.dumps(asdict(build_candidate(sys.argv[1], sys.argv[2], sys.argv[3]))))
