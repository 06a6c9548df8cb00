"""The bubblewrap (``bwrap``) sandbox that candidate code runs in: workers, the fork server
they are forked from, and candidate builds.

A candidate is untrusted code, often written by a policy rewarded for the verdict. Inside
the sandbox it has no network, its own PID namespace (the judge and the rest of the host
are out of sight and out of reach of signals and ptrace), no capabilities, a read-only
view of the file system in which ``/tmp`` and the home directories are empty, private
tmpfs mounts, and only the paths it must write (its run folder, the build cache) bound
writable. It still runs as the user: what the user can read outside the hidden folders,
it can read.
"""
from __future__ import annotations

import atexit
import functools
import glob
import os
import shutil
import site
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

TOOL = "bwrap"
ENV = "KB_SANDBOX"
INSIDE = "KB_IN_SANDBOX"
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)


class SandboxError(Exception):
    """The sandbox was asked for and cannot be made; the message names the remedy."""


def wanted(choice: bool | None = None) -> bool:
    """``choice`` when given (``--no-sandbox`` passes False), else on unless ``KB_SANDBOX=0``."""
    return os.environ.get(ENV, "1") != "0" if choice is None else choice


def check() -> None:
    """Raise ``SandboxError`` when bwrap is missing or cannot make its namespaces here."""
    problem = _problem()
    if problem:
        raise SandboxError(problem)


@functools.cache
def _problem() -> str:
    """Why no sandbox can be made ('' when one can); probed once per process (~5 ms)."""
    if shutil.which(TOOL) is None:
        return (f"{TOOL} is not installed (Debian package bubblewrap), so candidates cannot be sandboxed; "
                "install it or pass --no-sandbox (KB_SANDBOX=0) to run them with all your permissions")
    probe = subprocess.run(Sandbox().wrap(["true"]), capture_output=True, text=True)
    if probe.returncode != 0:
        first = (probe.stderr.strip().splitlines() or [f"exit {probe.returncode}"])[0]
        return f"{TOOL} cannot make a sandbox here ({first}); fix that or pass --no-sandbox (KB_SANDBOX=0)"
    return ""


def hidden_roots() -> list[str]:
    """Folders the sandbox replaces by empty tmpfs mounts: scratch space and home directories,
    where other processes' files and the user's secrets live."""
    roots = ["/tmp", "/var/tmp", os.path.expanduser("~"), "/root", f"/run/user/{os.getuid()}"]
    kept: list[str] = []
    for root in sorted({os.path.realpath(r) for r in roots}, key=len):
        if root != "/" and os.path.isdir(root) and not any(_under(root, k) for k in kept):
            kept.append(root)  # a home under /tmp is hidden with /tmp, not remade as an empty folder in it
    return kept


def hidden(path: str | Path) -> bool:
    """Whether ``path`` is out of the sandbox's sight (under a hidden root)."""
    real = os.path.realpath(path)
    return any(_under(real, r) for r in hidden_roots())


@dataclass(frozen=True)
class Sandbox:
    """What one sandbox may write (``writable``) and which hidden paths it may read
    (``readable``, e.g. the caller's directory); the harness and its Python are readable too.
    The hidden roots are part of it: a process whose $HOME changed needs another sandbox."""

    writable: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = field(default_factory=lambda: tuple(hidden_roots()))

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` as a command run inside this sandbox."""
        args = [TOOL, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session",
                "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm",
                "--proc", "/proc", "--setenv", INSIDE, "1"]
        for node in sorted(glob.glob("/dev/nvidia*")):
            args += ["--dev-bind", node, node]
        for root in self.hidden:
            args += ["--tmpfs", root]
        for path in ("/run/docker.sock", "/var/run/docker.sock"):
            if os.path.exists(path):
                args += ["--ro-bind", "/dev/null", path]
        for path in self.shown():
            args += ["--ro-bind", path, path]
        for path in sorted(dict.fromkeys(os.path.realpath(p) for p in self.writable), key=len):
            args += ["--bind", path, path]
        return args + ["--", *argv]

    def shown(self) -> list[str]:
        """The hidden paths bound back read-only (the harness, its Python, ``readable``)."""
        return _visible(self.readable, self.hidden)


def _visible(extra: tuple[str, ...], roots: tuple[str, ...]) -> list[str]:
    """Hidden paths the sandbox must still read: the harness, the Python it runs (a venv or a
    user site under the home), ``extra``; never a hidden root itself or a folder holding one
    (that would show the whole home)."""
    wanted_paths = [_PACKAGE_ROOT, sys.prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
                    site.getuserbase(), *extra, *(p for p in sys.path if p)]
    keep: list[str] = []
    for path in sorted({os.path.realpath(p) for p in wanted_paths}, key=len):
        covers_root = any(_under(r, path) for r in roots)
        shown = os.path.exists(path) and any(_under(path, r) for r in roots) and not covers_root
        if shown and not any(_under(path, k) for k in keep):
            keep.append(path)
    return keep


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def environment(env: dict[str, str], home: Path) -> dict[str, str]:
    """``env`` for a sandboxed process: a writable home of its own (torch's and ninja's caches
    land there), temporary files in the private ``/tmp``, the user's site-packages kept."""
    home.mkdir(parents=True, exist_ok=True)
    return {**env, "HOME": str(home), "TMPDIR": "/tmp", "PYTHONUSERBASE": site.getuserbase()}


@functools.cache
def scratch_root() -> Path:
    """This process's folder for run folders, bound writable into the fork server's sandbox
    (its mount namespace is made once, so every run folder must lie under one root)."""
    root = Path(tempfile.mkdtemp(prefix="kb-sandbox-"))
    atexit.register(shutil.rmtree, root, True)
    return root


def exit_code(returncode: int) -> int:
    """bwrap reports a command killed by signal N as exit 128+N; give it back as ``Popen`` would (-N)."""
    return 128 - returncode if 128 < returncode < 128 + 65 else returncode
