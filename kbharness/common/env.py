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


def default_device() -> str:
    """cuda when a GPU is visible, else cpu: every command's default."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


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


CLOCK_DRIFT = 0.10
TEMP_DRIFT_C = 10


def gpu_state(device: str) -> dict[str, float] | None:
    """SM clock (MHz) and temperature (°C) through NVML, as torch exposes it; None where
    there is no GPU or no NVML binding (pynvml / nvidia-ml-py)."""
    import torch

    if not (device.startswith("cuda") and torch.cuda.is_available()):
        return None
    try:
        d = torch.device(device)
        return {"sm_mhz": float(torch.cuda.clock_rate(d)), "temp_c": float(torch.cuda.temperature(d))}
    except Exception:
        return None


def state_drift(start: dict[str, float] | None, end: dict[str, float] | None) -> str:
    """A warning when the clock or temperature moved enough during timing to bias a speedup."""
    if not start or not end:
        return ""
    moved = []
    if start["sm_mhz"] > 0 and abs(end["sm_mhz"] - start["sm_mhz"]) / start["sm_mhz"] > CLOCK_DRIFT:
        moved.append(f"SM clock {start['sm_mhz']:.0f} → {end['sm_mhz']:.0f} MHz")
    if abs(end["temp_c"] - start["temp_c"]) > TEMP_DRIFT_C:
        moved.append(f"temperature {start['temp_c']:.0f} → {end['temp_c']:.0f} °C")
    return ("GPU state moved during timing: " + ", ".join(moved)) if moved else ""
