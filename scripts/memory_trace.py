"""Who holds the device's memory during one evaluation: before each request the judge sends
its runner, the judge's allocated and reserved bytes, its shared buffers, and the device's
use by every process (the runner's share is the rest).

    python scripts/memory_trace.py PROBLEM_FILE SOLUTION_FILE [--memory-limit 80]

Runs the judge in this process with its runner forked from it first, as
``scripts/profile_eval.py`` does (no worker, no sandbox: for the harness's own references).
A request of the same kind as the one before it prints only where it needs more memory than
any before it, so a timing loop prints a few lines. For finding why a large problem's
candidate runs out of memory beside the judge on an 80 GB GPU.
"""
from __future__ import annotations

import argparse
import gc
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kbharness.boundary import runner_client  # noqa: E402
from kbharness.common.buildcache import DEFAULT_CACHE_DIR  # noqa: E402
from kbharness.common.spec import EvalSpec, Settings  # noqa: E402
from kbharness.judge import candidate  # noqa: E402
from kbharness.judge.evaluate import evaluate  # noqa: E402
from kbharness.runner import launch  # noqa: E402

GIB = 2**30


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem", type=Path)
    ap.add_argument("solution", type=Path)
    ap.add_argument("--memory-limit", type=float, default=80.0)
    ap.add_argument("--time-budget", type=float, default=1.0)
    args = ap.parse_args()
    settings = Settings(device="cuda", memory_limit_gib=args.memory_limit, time_budget_s=args.time_budget)
    spec = EvalSpec(args.problem.resolve(), args.solution.resolve(), settings, DEFAULT_CACHE_DIR)
    exchanges: list = []
    made = candidate.RemoteCandidate.__init__

    def remember(self, *a, **k):
        made(self, *a, **k)
        exchanges.append(self.exchange)

    last = {"op": None, "device": 0}
    phase = ["start"]
    seen_phases: set[str] = set()
    sent = runner_client.Runner.request

    def traced(self, op, **fields):
        if torch.cuda.is_initialized():
            free, total = torch.cuda.mem_get_info()
            used = total - free
            shared = exchanges[-1].nbytes() if exchanges else 0
            if op != last["op"] or used > last["device"]:
                print(f"{phase[-1]:>10} {op:>10}: device {used / GIB:6.1f} GiB | judge allocated "
                      f"{torch.cuda.memory_allocated() / GIB:6.1f} reserved {torch.cuda.memory_reserved() / GIB:6.1f} "
                      f"shared {shared / GIB:6.1f} | runner and contexts "
                      f"{(used - torch.cuda.memory_reserved() - shared) / GIB:6.1f}", flush=True)
                if phase[-1] not in seen_phases:
                    seen_phases.add(phase[-1])
                    holders()
            last.update(op=op, device=max(used, last["device"]) if op == last["op"] else used)
        return sent(self, op, **fields)

    def holders() -> None:
        """The live device tensors of 256 MiB or more, and what refers to each."""
        gc.collect()
        everything = gc.get_objects()
        for obj in everything:
            if isinstance(obj, torch.Tensor) and obj.is_cuda and obj.untyped_storage().nbytes() >= GIB // 4:
                refs = [_referrer(r, obj) for r in gc.get_referrers(obj) if r is not everything][:6]
                print(f"{'':>12}held: {tuple(obj.shape)} {str(obj.dtype)[6:]} "
                      f"{obj.untyped_storage().nbytes() / GIB:.1f} GiB by {', '.join(refs)}", flush=True)

    candidate.RemoteCandidate.__init__ = remember
    runner_client.Runner.request = traced
    with tempfile.TemporaryDirectory() as run_dir:
        runner = launch.start(Path(run_dir) / "runner", None)  # before this process touches CUDA
        try:
            record = evaluate(spec, Path(run_dir), phase=phase.append, runner=runner)
        finally:
            runner.stop()
    print(f"{args.problem.name}: {record.verdict.value} {record.message[:600]}".rstrip())
    print(f"memory: {record.memory}")
    return 0


def _referrer(r, obj) -> str:
    if isinstance(r, dict):
        return "dict[" + ", ".join(str(k) for k, v in r.items() if v is obj)[:60] + "]"
    if isinstance(r, (list, tuple)):
        return f"{type(r).__name__} of {len(r)}"
    code = getattr(r, "f_code", None)
    return f"frame {code.co_name}" if code is not None else type(r).__name__


if __name__ == "__main__":
    sys.exit(main())
