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
    yielding results as they finish.

    Compilation is CPU-bound and dominates a cold evaluation, so building ``jobs`` at a
    time lets the (one) GPU evaluate from a warm cache; a build that hangs is killed with
    its compiler processes and costs only its own slot."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_build_in_child, str(s), device, str(cache_dir), timeout_s) for s in solutions]
        for future in as_completed(futures):
            yield future.result()


def _build_in_child(solution: str, device: str, cache_dir: str, timeout_s: float) -> BuildResult:
    from kbharness.isolate import child_env, kill_group

    start = time.perf_counter()
    cmd = [sys.executable, "-m", "kbharness.build", solution, device, cache_dir]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, start_new_session=True, env=child_env())
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        return BuildResult(solution, False, time.perf_counter() - start, f"build timed out after {timeout_s:g} s")
    lines = out.strip().splitlines()
    try:
        return BuildResult(**json.loads(lines[-1]))
    except (IndexError, ValueError, TypeError):
        tail = lines[-1] if lines else "no output"
        return BuildResult(solution, False, time.perf_counter() - start,
                           f"build worker died (exit {proc.returncode}): {tail[:300]}")


if __name__ == "__main__":
    print(json.dumps(asdict(build_candidate(sys.argv[1], sys.argv[2], sys.argv[3]))))
