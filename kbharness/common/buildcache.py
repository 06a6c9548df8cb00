"""The build cache's entries: where a candidate's extensions are built, and who may build them.

``load_inline`` caches by extension *name* in one directory, so two candidates that both
call their extension ``fused_relu`` would rebuild each other every time. Giving every
(candidate source, torch, CUDA, GPU arch) its own directory makes the cache content-keyed:
a repeat evaluation costs ~0.1 s of "compilation". Concurrent builds of one entry are
serialized by an ``flock`` that dies with its holder (``exclusive_build``), not by torch's
lock file alone, which a killed build leaves behind. The worker uses this module; the
build pool that fills the cache ahead of evaluations is ``build``.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import sys
import sysconfig
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

DEFAULT_CACHE_DIR = Path(os.environ.get("KB_CACHE_DIR", Path.home() / ".cache" / "kbharness"))
LOCK_FILE = "build.lock"
WAIT_PHASE = "build-wait"
_KEY = re.compile(r"[0-9a-f]{20}")


def build_key(code: str, device: str) -> str:
    import torch

    arch = ""
    if device.startswith("cuda") and torch.cuda.is_available():
        arch = "sm_%d%d" % torch.cuda.get_device_capability(torch.device(device))
    parts = [code, torch.__version__, str(torch.version.cuda), arch, sys.version.split()[0]]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def entry_dir(cache_dir: Path, code: str, device: str) -> Path:
    return Path(cache_dir) / "extensions" / build_key(code, device)


def prepare_build_env(cache_dir: Path, code: str, device: str, entry: Path | None = None) -> Path:
    """Point torch's extension builder at this candidate's cache directory (``entry`` where
    the sandbox already made it the one writable), and return it."""
    directory = entry if entry is not None else entry_dir(cache_dir, code, device)
    directory.mkdir(parents=True, exist_ok=True)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(directory)
    # Triton's compiled kernels (and autotuning results) go into the same entry.
    os.environ["TRITON_CACHE_DIR"] = str(directory / "triton")
    scripts = sysconfig.get_path("scripts")
    path = os.environ.get("PATH", "")
    if scripts and scripts not in path.split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + path
    return directory


@contextmanager
def exclusive_build(phase: Callable[[str], None]) -> Iterator[None]:
    """Be the only builder of the cache entry torch builds into (``TORCH_EXTENSIONS_DIR``).

    torch's own lock is a file its holder deletes when done: a build killed mid-compile
    leaves it, and every later build of the entry waits on it forever. This lock is an
    ``flock`` on an open file, released by the kernel when its holder dies; whoever holds
    it is the entry's only builder, so a torch lock file found then is stale and removed.
    Waiting for another process's build is reported as ``phase(WAIT_PHASE)``, and the end
    of the wait as ``phase("build")``, so that the wait is never charged to the candidate.
    A directory that is no entry of a kbharness cache (the user's own) is left alone."""
    root = Path(os.environ.get("TORCH_EXTENSIONS_DIR", "."))
    if root.parent.name != "extensions" or not _KEY.fullmatch(root.name):
        yield
        return
    with _entry_lock(root, phase):
        for stale in root.glob("*/lock"):
            stale.unlink(missing_ok=True)
        yield


@contextmanager
def _entry_lock(directory: Path, phase: Callable[[str], None] | None) -> Iterator[None]:
    """The entry's flock; with ``phase`` None, ``BlockingIOError`` instead of waiting. The lock
    file is checked to still be the one at its path after the wait (``clear_entry`` may have
    moved the entry away meanwhile)."""
    path = directory / LOCK_FILE
    while True:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if phase is None:
                    raise
                phase(WAIT_PHASE)
                fcntl.flock(fd, fcntl.LOCK_EX)
                phase("build")
            if _is_file_at(fd, path):
                yield
                return
        finally:
            os.close(fd)


def _is_file_at(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def clear_entry(directory: Path) -> bool:
    """Remove one cache entry; False, leaving it, while a build of it runs."""
    if not directory.is_dir():
        return True
    trash = directory.with_name(f".{directory.name}.{os.getpid()}.removing")
    try:
        with _entry_lock(directory, None):
            directory.rename(trash)
    except BlockingIOError:
        return False
    shutil.rmtree(trash, ignore_errors=True)
    return True


def entries(cache_dir: Path) -> list[Path]:
    root = Path(cache_dir) / "extensions"
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []


