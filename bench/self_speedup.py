"""A model against itself: the speedup the harness gives a problem's reference judged against
itself, evaluation after evaluation, beside what the same timer gives two plain processes
that take turns timing the same model on the same inputs (forked from one parent: no judge,
no runner, no sandbox, no boundary). Both should come out at 1.00. The plain pair's spread
is the machine's own; a harness spread wider than it is an asymmetry between the judge's
process and the runner's, which an honest candidate pays (or gains) for nothing.

    python bench/self_speedup.py PROBLEM.py --size N=512 --device cpu --runs 6 --out bench/results/self_speedup_cpu.md
"""
from __future__ import annotations

import argparse
import os
import pickle
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


def _plain_side(problem_path: Path, settings: Settings, requests: int, replies: int) -> None:
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
        while (seed := int.from_bytes(os.read(requests, 8), "little", signed=True)) != STOP:
            inputs = make_inputs(problem, seed, settings, device)
            buffers = [torch.empty_like(x) if isinstance(x, torch.Tensor) else x for x in inputs]
            times.append(timer.time(lambda: model(*buffers), stage=Staged(buffers, inputs), key="model").time.call_ms)
            os.write(replies, b"k")
    os.write(replies, pickle.dumps(statistics.median(times)))


def plain_pair(problem_path: Path, settings: Settings, calls: int) -> float:
    """The first process's median over the second's, the two taking turns ``calls`` times."""
    sides = []
    for _ in range(2):
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                _plain_side(problem_path, settings, req_r, rep_w)
            finally:
                os._exit(0)
        sides.append((pid, req_w, rep_r))
    for i in range(calls):
        for _, req_w, rep_r in sides:
            os.write(req_w, (settings.seed + i).to_bytes(8, "little", signed=True))
            os.read(rep_r, 1)
    medians = []
    for pid, req_w, rep_r in sides:
        os.write(req_w, STOP.to_bytes(8, "little", signed=True))
        medians.append(pickle.loads(os.read(rep_r, 4096)))
        os.waitpid(pid, 0)
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
