"""Where one evaluation's wall time goes: each phase's seconds and the functions that take them.

    python scripts/profile_eval.py PROBLEM_FILE SOLUTION_FILE [--device cuda] [--memory-limit 80] [--top 25]

Runs the judge (``evaluate``) in this process with its runner forked from it first (no worker,
no sandbox: meant for the harness's own references and trusted candidates) under cProfile,
and prints the phases' durations and the functions with the most cumulative time (time in
``receive`` is the runner's). For finding what makes a large problem slow.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kbharness.judge.evaluate import evaluate  # noqa: E402
from kbharness.common.buildcache import DEFAULT_CACHE_DIR  # noqa: E402
from kbharness.common.spec import EvalSpec, Settings  # noqa: E402
from kbharness.runner import launch  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem", type=Path)
    ap.add_argument("solution", type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--memory-limit", type=float, default=0.0)
    ap.add_argument("--time-budget", type=float, default=1.0)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    settings = Settings(device=args.device, memory_limit_gib=args.memory_limit, time_budget_s=args.time_budget)
    spec = EvalSpec(args.problem.resolve(), args.solution.resolve(), settings, DEFAULT_CACHE_DIR)
    marks: list[tuple[str, float]] = [("start", time.perf_counter())]
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory() as run_dir:
        runner = launch.start(Path(run_dir) / "runner", None)  # before this process touches CUDA
        profiler.enable()
        try:
            record = evaluate(spec, Path(run_dir), phase=lambda p: marks.append((p, time.perf_counter())), runner=runner)
        finally:
            profiler.disable()
            runner.stop()
    marks.append(("end", time.perf_counter()))
    print(f"{args.problem.name}: {record.verdict.value} {record.message}".rstrip())
    print("phases: " + ", ".join(f"{a} {b_t - a_t:.2f} s" for (a, a_t), (_, b_t) in zip(marks, marks[1:])))
    print(f"memory: {record.memory}")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(args.top)
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
