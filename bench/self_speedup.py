"""A model against itself: the speedup the harness gives a problem's reference judged against
itself, evaluation after evaluation, beside what the same timer gives two plain processes
that take turns timing the same model on the same inputs (started from one parent: no judge,
no runner, no sandbox, no boundary). Both should come out at 1.00. The plain pair's spread
is the machine's own; a harness spread wider than it is an asymmetry between the judge's
process and the runner's, which an honest candidate pays (or gains) for nothing.

    python bench/self_speedup.py PROBLEM.py --size N=512 --device cpu --runs 6 --out bench/results/self_speedup_cpu.md
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbharness.common.buildcache import DEFAULT_CACHE_DIR  # noqa: E402
from kbharness.common.spec import EvalSpec, Settings  # noqa: E402
from kbharness.execution.isolate import run_isolated  # noqa: E402

STOP = -1


def _plain_side(problem_path: Path, settings: Settings, conn) -> None:
    """One of the plain pair: build the model as the harness does, then time one call per
    request (a seed) on fresh inputs, reply, and at STOP send back the median."""
    import torch

    from kbharness.common import timing
    from kbharness.common.calls import Staged, build_model
    from kbharness.common.loading import load_problem
    from kbharness.judge.evaluate import make_inputs

    device = torch.device(settings.device)
    problem = load_problem(problem_path, settings.size_overrides)
    model = build_model(problem.Model, problem.get_init_inputs(), settings, device)
    timer = timing.timer_for(device)
    times = []
    with torch.no_grad():
        while (seed := conn.recv()) != STOP:
            inputs = make_inputs(problem, seed, settings, device)
            buffers = [torch.empty_like(x) if isinstance(x, torch.Tensor) else x for x in inputs]
            times.append(timer.time(lambda: model(*buffers), stage=Staged(buffers, inputs), key="model").time.call_ms)
            conn.send(None)
    conn.send(statistics.median(times))


def plain_pair(problem_path: Path, settings: Settings, calls: int) -> float:
    """The first process's median over the second's, the two taking turns ``calls`` times.
    Spawned, not forked: by then this process runs the fork server's threads (Python warns
    that a fork may deadlock) and may have started CUDA, which a forked child cannot use;
    forked, the pair hung on an H100 before its first reply."""
    ctx = multiprocessing.get_context("spawn")
    sides = []
    for _ in range(2):
        mine, theirs = ctx.Pipe()
        proc = ctx.Process(target=_plain_side, args=(problem_path, settings, theirs), daemon=True)
        proc.start()
        theirs.close()  # a side that dies then ends our recv() with EOFError, not a hang
        sides.append((proc, mine))
    for i in range(calls):
        for _, conn in sides:
            conn.send(settings.seed + i)
            conn.recv()
    medians = []
    for proc, conn in sides:
        conn.send(STOP)
        medians.append(conn.recv())
        proc.join()
    return medians[0] / medians[1]


def _spread(values: list[float]) -> str:
    return f"{min(values):.3f}-{max(values):.3f} (median {statistics.median(values):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problem", type=Path)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--time-budget", type=float, default=3.0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sizes = {k: int(v) for k, v in (s.split("=", 1) for s in args.size)}
    settings = Settings(device=args.device, time_budget_s=args.time_budget, size_overrides=sizes)
    problem = args.problem.resolve()
    candidate = Path(tempfile.mkdtemp()) / f"ref_{problem.stem}.py"
    candidate.write_text(problem.read_text() + "\n\nModelNew = Model\n")
    harness, plain = [], []
    for run in range(args.runs):
        record = run_isolated(EvalSpec(problem, candidate, settings, DEFAULT_CACHE_DIR))
        if record.speedup is None:
            raise SystemExit(f"{problem.name}: {record.verdict.value}: {record.message} {record.flags}")
        harness.append(record.speedup)
        plain.append(plain_pair(problem, settings, record.ref_timing.n))
        print(f"run {run + 1}: harness {harness[-1]:.3f} ({record.ref_timing.n} calls a side), plain pair {plain[-1]:.3f}",
              flush=True)
    sized = " ".join(f"--size {s}" for s in args.size)
    text = (f"# A model against itself: {problem.name} {sized}\n\n"
            f"{datetime.now(timezone.utc):%Y-%m-%d} · {args.device} · {os.cpu_count()} cores · "
            f"`python bench/self_speedup.py {problem.name} {sized} --device {args.device} --runs {args.runs}`\n\n"
            "| timed by | speedup against itself, min-max of the runs |\n|---|---|\n"
            f"| the harness (judge and sandboxed runner) | {_spread(harness)} |\n"
            f"| two plain processes taking turns, same timer, same number of calls | {_spread(plain)} |\n")
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
