"""Where candidates' extensions are built, so that a second evaluation reuses the build.

``load_inline`` caches by extension *name* in one directory, so two candidates that both
call their extension ``fused_relu`` would rebuild each other every time. Giving every
(candidate source, torch, CUDA, GPU arch) its own directory makes the cache content-keyed:
a repeat evaluation costs ~0.1 s of "compilation", and concurrent builds of the same
candidate are serialized by torch's own lock file in that directory.
"""
from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
from pathlib import Path

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
