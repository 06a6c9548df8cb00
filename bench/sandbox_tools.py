"""bubblewrap against nsjail for the runner's sandbox (issue 16: "measure both and choose"):
the same confinement asked of each (the harness's ``Sandbox``: read-only root, hidden
/tmp and home directories with the harness's Python bound back, one writable scratch
folder, no network, own PID namespace, no capabilities), each confinement checked from
inside, then the wall time of a sandboxed ``true`` (the tool's own cost) and of a
sandboxed ``import torch`` (a worker's start), the tools alternating run by run.

    python bench/sandbox_tools.py --nsjail /path/to/nsjail --out bench/results/sandbox_tools_cpu.md

nsjail is not packaged in Debian; build it from github.com/google/nsjail (``make``, with
bison, flex, libprotobuf-dev, libnl-route-3-dev, protobuf-compiler).
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbharness.execution import sandbox  # noqa: E402

# Each check prints "ok" from inside the sandbox when the confinement holds.
CHECKS = {
    "own PID namespace (the host's processes out of sight)": "test $(ls -d /proc/[0-9]* | wc -l) -lt 10 && echo ok",
    "no network (a loopback of its own)": "test \"$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ')\" = lo && echo ok",
    "root file system read-only": "touch /usr/kb_probe 2>/dev/null && rm /usr/kb_probe || echo ok",
    "a file in the home directory out of sight": "test ! -e {home_secret} && echo ok",
    "a file in the host's /tmp out of sight": "test ! -e {tmp_secret} && echo ok",
    "scratch folder writable": "touch {scratch}/probe && echo ok",
    "no capabilities": "grep -q '^CapEff:\\s*0*$' /proc/self/status && echo ok",
    "harness's Python readable": "{python} -c 'import torch' && echo ok",
}


def bwrap_wrap(box: sandbox.Sandbox, argv: list[str]) -> list[str]:
    return box.wrap(argv)


def nsjail_wrap(tool: str, box: sandbox.Sandbox, argv: list[str]) -> list[str]:
    """The same confinement as ``Sandbox.wrap`` in nsjail's terms: its defaults already give
    new user, mount, PID, network, IPC and UTS namespaces, no capabilities, a new session and
    death with the parent; its rlimits and 600 s time limit are turned off (the harness sets
    its own)."""
    args = [tool, "--mode", "o", "--really_quiet", "--time_limit", "0", "--disable_rlimits", "--keep_env",
            "--chroot", "/", "--cwd", os.getcwd(), "--tmpfsmount", "/dev/shm"]
    for node in sorted(Path("/dev").glob("nvidia*")):
        args += ["--bindmount", f"{node}"]
    for root in box.hidden:
        args += ["--tmpfsmount", root]
    for path in box.shown():
        args += ["--bindmount_ro", path]
    for path in box.writable:
        args += ["--bindmount", os.path.realpath(path)]
    return args + ["--", *argv]


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nsjail", default=shutil.which("nsjail"), help="The nsjail binary (default: from PATH).")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if not args.nsjail:
        raise SystemExit("nsjail not found: build it (see this file's docstring) and pass --nsjail")
    scratch = tempfile.mkdtemp(prefix="kb-sandbox-bench-")
    box = sandbox.Sandbox(writable=(scratch,))
    tools = {"bubblewrap": lambda argv: bwrap_wrap(box, argv),
             "nsjail": lambda argv: nsjail_wrap(args.nsjail, box, argv),
             "none": lambda argv: argv}
    secrets = [Path(os.path.expanduser("~")) / ".kb_bench_secret", Path("/tmp/kb_bench_secret")]
    for secret in secrets:
        secret.write_text("secret")
    fill = {"home_secret": secrets[0], "tmp_secret": secrets[1], "scratch": scratch, "python": sys.executable}
    lines = [f"# Sandbox tools: bubblewrap against nsjail\n",
             f"{datetime.now(timezone.utc):%Y-%m-%d} · {platform.node() or 'host'} · {os.cpu_count()} cores · "
             f"`python bench/sandbox_tools.py --runs {args.runs}`\n",
             "| confinement | " + " | ".join(tools) + " |", "|---|" + "---|" * len(tools)]
    for name, script in CHECKS.items():
        row = []
        for wrap in tools.values():
            done = subprocess.run(wrap(["/bin/sh", "-c", script.format(**fill)]), capture_output=True, text=True)
            why = done.stderr.strip().splitlines()
            row.append("yes" if done.stdout.strip().endswith("ok") else "**no**" + (f" ({why[-1][:80]})" if why else ""))
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    for secret in secrets:
        secret.unlink()
    cases = {"`true` (the tool's own cost)": ["/bin/true"], "`import torch` (a worker's start)": [sys.executable, "-c", "import torch"]}
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.runs):
        for case, argv in cases.items():
            for tool, wrap in tools.items():
                times.setdefault((case, tool), []).append(timed(wrap(argv)))
    lines += ["", f"Wall time of one sandboxed command, ms: median (min-max) of {args.runs}, the tools alternating.\n",
              "| command | " + " | ".join(tools) + " |", "|---|" + "---|" * len(tools)]
    for case in cases:
        cells = [times[case, t] for t in tools]
        lines.append(f"| {case} | " + " | ".join(f"{statistics.median(c):.1f} ({min(c):.1f}-{max(c):.1f})" for c in cells) + " |")
    shutil.rmtree(scratch, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
