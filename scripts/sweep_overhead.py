"""Where a sweep's time goes around its evaluations, and what a CUDA context costs a process.

    python scripts/sweep_overhead.py REFS_DIR PROBLEMS_DIR [--device cuda] [--memory-limit 80] [--size batch_size=16]

Evaluates every reference candidate under REFS_DIR (``scripts/kernelbench.py refs``) one
after the other through ``run_isolated``, as ``kb sweep`` does, and prints for each the
parent's time, the record's ``wall_s`` (the evaluation inside the judge) and their
difference (the worker's start and end: fork, runner start, runner stop, context teardown,
the parent's polling), then each record's ``phase_s``. On a GPU it first times, in fresh
processes that have already imported torch, a CUDA context made alone, two made at once,
one made while another process loads cuBLAS and cuDNN, and how long a process holding a
context takes to exit.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

_CHILD = r"""
import sys, time, torch
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
t = time.perf_counter()
torch.ones(1, device="cuda")
torch.cuda.synchronize()
made = time.perf_counter() - t
if sys.argv[1] == "libs":
    x = torch.ones(64, 64, device="cuda")
    (x @ x).sum().item()
    torch.nn.functional.conv2d(torch.ones(1, 8, 8, 8, device="cuda"), torch.ones(8, 8, 3, 3, device="cuda")).sum().item()
sys.stdout.write(f"{made:.4f} {time.perf_counter() - t:.4f}\n"); sys.stdout.flush()
"""


def _contexts(kinds: list[str]) -> list[tuple[float, float, float]]:
    """Processes of ``kinds`` ("ctx": a context; "libs": a context, then cuBLAS and cuDNN)
    released at once: each one's (context s, all its work s, exit s after its report)."""
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, k], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True) for k in kinds]
    for p in procs:
        p.stdout.readline()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    out = []
    for p in procs:
        made, total = map(float, p.stdout.readline().split())
        t = time.perf_counter()
        p.wait()
        out.append((made, total, time.perf_counter() - t))
    return out


def contexts() -> None:
    for label, kinds in (("one context alone", ["ctx"]), ("two contexts at once", ["ctx", "ctx"]),
                         ("a context beside one loading cuBLAS and cuDNN", ["ctx", "libs"]),
                         ("a context, cuBLAS and cuDNN alone", ["libs"])):
        runs = [_contexts(kinds) for _ in range(3)]
        first = [r[0] for r in runs]
        print(f"{label}: context {statistics.median(r[0] for r in first):.3f} s, its work "
              f"{statistics.median(r[1] for r in first):.3f} s, exit {statistics.median(r[2] for r in first):.3f} s"
              + (f"; the other's work {statistics.median(r[1][1] for r in runs):.3f} s" if len(kinds) > 1 else ""))


def sweep(refs: Path, problems_dir: Path, device: str, memory_limit: float, time_budget: float,
          sizes: dict[str, int]) -> None:
    from kbharness.common.buildcache import DEFAULT_CACHE_DIR
    from kbharness.common.spec import EvalSpec, Settings
    from kbharness.execution.isolate import run_isolated
    from kbharness.orchestration import sweep as placing

    jobs, _ = placing.place(placing.candidates([refs]), problems_dir)
    settings = Settings(device=device, memory_limit_gib=memory_limit, time_budget_s=time_budget, size_overrides=sizes)
    rows = []
    for job in jobs:
        spec = EvalSpec(job.problem.path.resolve(), job.solution.resolve(), settings, DEFAULT_CACHE_DIR)
        t = time.perf_counter()
        record = run_isolated(spec)
        parent = time.perf_counter() - t
        rows.append((job.problem.key, parent, record.wall_s, record.verdict.value, record.phase_s))
    print("| problem | parent s | wall_s | around it s | verdict |\n|---|---|---|---|---|")
    for key, parent, wall, verdict, _ in rows:
        print(f"| {key} | {parent:.2f} | {wall:.2f} | {parent - wall:.2f} | {verdict} |")
    later = rows[1:] or rows
    print(f"\naround each evaluation after the first: median {statistics.median(p - w for _, p, w, _, _ in later):.3f} s; "
          f"first (the fork server's start with it) {rows[0][1] - rows[0][2]:.2f} s")
    for key, _, _, _, phases in rows:
        print(f"- {key}: " + ", ".join(f"{k} {v:.3f}" for k, v in phases.items()))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("refs", type=Path)
    ap.add_argument("problems_dir", type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--memory-limit", type=float, default=0.0)
    ap.add_argument("--time-budget", type=float, default=2.0)
    ap.add_argument("--size", action="append", default=[], help="NAME=N, as kb run's --size")
    args = ap.parse_args()
    if args.device.startswith("cuda"):
        contexts()
    sizes = {k: int(v) for k, v in (s.split("=", 1) for s in args.size)}
    sweep(args.refs, args.problems_dir, args.device, args.memory_limit, args.time_budget, sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
