"""Facts about the machine a record was made on, so results are self-describing."""
from __future__ import annotations

import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any


def tool_version() -> str:
    try:
        return metadata.version("kbharness")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def git_commit(repo: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def describe(device: str) -> dict[str, Any]:
    """Device, GPU and software versions; called in the worker, where the device is in use."""
    import torch

    info: dict[str, Any] = {
        "device": device,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "host": socket.gethostname(),
        "cpu": platform.processor() or platform.machine(),
        "kbharness": tool_version(),
        "gpu": None,
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        d = torch.device(device)
        info["gpu"] = torch.cuda.get_device_name(d)
        info["cudnn"] = torch.backends.cudnn.version()
        info["gpu_capability"] = "%d.%d" % torch.cuda.get_device_capability(d)
    return info
