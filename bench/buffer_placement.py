"""Why a memory-bound pair's speedup moves between processes: the same candidate and
reference timed with the harness's Timer under different buffer regimes, per-call times
kept with the distance between the input and output buffers.

Regimes, each ``--calls`` calls of candidate then reference, ``harness`` run first and last
so that drift over the run shows:
- ``harness``: what ``evaluate`` did when this was written: a fresh input set per call,
  cloned for each model, outputs kept until the next call's inputs exist (new buffers every call);
- ``static``: fresh values copied into the same input buffers every call, outputs dropped;
- ``same``: one input set reused, as ``triton.testing.do_bench`` does.

    python bench/buffer_placement.py --only level1/34_ --out bench/results/buffer_placement_h100.md
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from timer_accuracy import _models  # noqa: E402


def _first_tensor(x):
    return x if hasattr(x, "data_ptr") else next(t for t in x if hasattr(t, "data_ptr"))


def regime(name: str, problem, models, settings, device, calls: int) -> dict:
    import torch

    from kbharness.judge import evaluate
    from kbharness.common.timing import timer_for

    timer = timer_for(device)
    static = evaluate.clone(evaluate.make_inputs(problem, settings.seed, settings, device))
    times = {"new": [], "ref": []}
    gaps = []
    kept = None
    for i in range(calls):
        fresh = evaluate.make_inputs(problem, settings.seed + 10_000 + i, settings, device)
        if name == "harness":
            ins = {"new": evaluate.clone(fresh), "ref": evaluate.clone(fresh)}
        else:
            if name == "static":
                for s, v in zip(static, fresh):
                    if isinstance(s, torch.Tensor):
                        s.copy_(v)
            ins = {"new": static, "ref": static}
        del fresh
        torch.cuda.synchronize()
        outs = {}
        for who in ("new", "ref"):
            timed = timer.time(lambda: models[who](*ins[who]))
            times[who].append(timed.time.call_ms)
            outs[who] = timed.output
        a, out = _first_tensor(ins["new"]), _first_tensor(outs["new"])
        gaps.append((out.data_ptr() - a.data_ptr()) / 2**20)
        kept = outs if name == "harness" else None
        del outs
    del kept
    return {"times": times, "gaps": gaps}


def summary(times: list[float]) -> str:
    q = statistics.quantiles(times, n=4)
    return f"{statistics.median(times):.4f} ms (IQR {100 * (q[2] - q[0]) / statistics.median(times):.0f}%)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    import torch

    from kbharness.common.loading import load_problem
    from kbharness.common.spec import Settings

    settings = Settings(device="cuda")
    device = torch.device("cuda")
    lines = [f"# Buffer placement\n\n{torch.cuda.get_device_name()} · torch {torch.__version__} · "
             f"{args.calls} calls per regime\n", "| pair | regime | candidate | reference | speedup |",
             "|---|---|---|---|---|"]
    detail = []
    pairs = [c for c in sorted((ROOT / "solutions").glob("level*/*/cuda_fused.py"))
             if not args.only or any(o in str(c) for o in args.only)]
    for cand in pairs:
        problem_path = ROOT / "problems" / cand.parent.parent.name / f"{cand.parent.name}.py"
        models, _ = _models(str(problem_path), str(cand))
        problem = load_problem(problem_path)
        with torch.no_grad():
            for name in ("harness", "static", "same", "harness"):
                r = regime(name, problem, models, settings, device, args.calls)
                sp = statistics.median(r["times"]["ref"]) / statistics.median(r["times"]["new"])
                lines.append(f"| {cand.parent.name} | {name} | {summary(r['times']['new'])} | "
                             f"{summary(r['times']['ref'])} | {sp:.2f}× |")
                detail.append(f"{cand.parent.name} {name}: candidate ms / output - input MiB: " + ", ".join(
                    f"{t:.3f}/{g:+.0f}" for t, g in zip(r["times"]["new"], r["gaps"])))
                print(lines[-1], file=sys.stderr, flush=True)
        text = "\n".join(lines + ["", "Per call:", ""] + [f"- {d}" for d in detail]) + "\n"
        if args.out:
            args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
