"""Timer accuracy on the GPU: each model's median per-call time as the harness measures
it, as ``triton.testing.do_bench`` measures it, and as Nsight Compute sums it
(``gpu__time_duration`` over the call's kernels, ``--clock-control none``), plus the
spread of the speedup over repeated harness runs of one pair, and the judge's clock (its
time of a call in back-to-back batches, and its agreement: the events' speedup over the
clock's, 1 when they agree). Goal: the harness within 3% of ncu for calls of at least 50 µs;
speedup spread over 5 runs at most 2%.

    python bench/timer_accuracy.py --out bench/results/timer_accuracy_h100.md

Each measurement of candidate code runs in its own process, as in the harness.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbharness.common.buildcache import DEFAULT_CACHE_DIR  # noqa: E402
from kbharness.execution.isolate import run_isolated  # noqa: E402
from kbharness.common.spec import EvalSpec, Settings  # noqa: E402

NCU_CALLS = 5


def _models(problem_path: str, candidate_path: str):
    """Reference and candidate built as the harness builds them, and one input set."""
    import torch

    from kbharness.judge import evaluate
    from kbharness.common.buildcache import prepare_build_env
    from kbharness.common.loading import load_model_new, load_problem, read_solution

    settings = Settings(device="cuda")
    device = torch.device("cuda")
    problem = load_problem(Path(problem_path))
    source = read_solution(Path(candidate_path))
    prepare_build_env(DEFAULT_CACHE_DIR, source.code, "cuda")
    new_cls = load_model_new(source, Path(tempfile.mkdtemp()))
    ref = evaluate.build_model(problem.Model, problem.get_init_inputs(), settings, device)
    new = evaluate.build_model(new_cls, problem.get_init_inputs(), settings, device)
    inputs = evaluate.make_inputs(problem, settings.seed, settings, device)
    return {"ref": ref, "new": new}, inputs


def child_do_bench(problem_path: str, candidate_path: str) -> None:
    import torch
    from triton.testing import do_bench

    models, inputs = _models(problem_path, candidate_path)
    with torch.no_grad():
        out = {k: do_bench(lambda m=m: m(*inputs), warmup=25, rep=200, return_mode="median") for k, m in models.items()}
    print(json.dumps(out))


def child_ncu_target(problem_path: str, candidate_path: str, which: str) -> None:
    import torch

    models, inputs = _models(problem_path, candidate_path)
    model = models[which]
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        torch.cuda.synchronize()
        for _ in range(NCU_CALLS):
            with torch.cuda.nvtx.range("kbcall"):
                model(*inputs)
            torch.cuda.synchronize()


def ncu_ms(problem_path: Path, candidate_path: Path, which: str) -> float | None:
    """Per-call device time: the summed kernel durations in the NVTX range, over the calls."""
    cmd = ["ncu", "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--nvtx",
           "--nvtx-include", "kbcall/", "--csv", "--print-units", "base", sys.executable, __file__,
           "--child", "ncu", str(problem_path), str(candidate_path), which]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    text = proc.stdout[proc.stdout.find('"ID"'):]
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r.get("Metric Name") == "gpu__time_duration.sum"]
    if not rows:
        print(f"ncu gave no rows for {candidate_path} {which}: {proc.stderr[-500:]}", file=sys.stderr)
        return None
    total_ns = sum(float(r["Metric Value"].replace(",", "")) for r in rows)
    return total_ns / 1e6 / NCU_CALLS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--limit", type=int, default=None, help="Only the first N candidates.")
    ap.add_argument("--only", action="append", default=[],
                    help="Only candidates whose path contains this text (repeatable).")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.child:
        mode, *rest = args.child
        (child_do_bench if mode == "do_bench" else child_ncu_target)(*rest)
        return
    import torch

    pairs = [(ROOT / "problems" / c.parent.parent.name / f"{c.parent.name}.py", c)
             for c in sorted((ROOT / "solutions").glob("level*/*/cuda_fused.py"))
             if not args.only or any(o in str(c) for o in args.only)][:args.limit]
    settings = Settings(device="cuda")
    rows, spreads = [], []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    header = (f"{datetime.now(timezone.utc):%Y-%m-%d} · {torch.cuda.get_device_name()} · torch {torch.__version__} · "
              f"CUDA {torch.version.cuda} · harness median of {args.repeats} runs")
    for problem, cand in pairs:
        started = time.monotonic()
        records = [run_isolated(EvalSpec(problem, cand, settings, DEFAULT_CACHE_DIR)) for _ in range(args.repeats)]
        good = [r for r in records if r.correct]
        if not good:
            print(f"{cand}: {records[0].verdict.value}: {records[0].message}", file=sys.stderr)
            continue
        speedups = [r.speedup for r in good]
        agreements = [r.judge_clock["agreement"] for r in good if r.judge_clock.get("agreement")]
        spreads.append((cand, (max(speedups) - min(speedups)) / statistics.median(speedups),
                        statistics.median(agreements) if agreements else None))
        progress(f"{good[0].problem}: {len(good)} harness runs in {time.monotonic() - started:.0f} s")
        db = subprocess.run([sys.executable, __file__, "--child", "do_bench", str(problem), str(cand)],
                            capture_output=True, text=True, timeout=600, env=env)
        dob = json.loads(db.stdout.strip().splitlines()[-1]) if db.returncode == 0 else {}
        progress(f"{good[0].problem}: do_bench done at {time.monotonic() - started:.0f} s")
        for which, label in (("ref", "reference"), ("new", "candidate")):
            harness = statistics.median((r.ref_timing if which == "ref" else r.new_timing).median_ms for r in good)
            clocked = [r.judge_clock[f"{which}_ms"] for r in good if r.judge_clock.get(f"{which}_ms")]
            ncu = ncu_ms(problem, cand, which)
            rows.append((f"{good[0].problem} {label}", harness, dob.get(which), ncu,
                         statistics.median(clocked) if clocked else None))
            progress(f"{rows[-1][0]}: ncu done at {time.monotonic() - started:.0f} s")
        # Written after every pair, so that a run cut short keeps what it measured.
        text = report(header, rows, spreads, args.repeats)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text)
    print(report(header, rows, spreads, args.repeats))


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def report(header: str, rows: list, spreads: list, repeats: int) -> str:
    lines = ["# Timer accuracy", "", header, "",
             "| model | harness | do_bench | ncu | harness vs ncu | judge's clock | clock vs ncu |",
             "|---|---|---|---|---|---|---|"]
    ms = lambda v: "-" if v is None else f"{v:.4f} ms"  # noqa: E731
    vs = lambda v, n: f"{100 * (v - n) / n:+.1f}%" if v is not None and n else "-"  # noqa: E731
    for name, h, d, n, c in rows:
        lines.append(f"| {name} | {ms(h)} | {ms(d)} | {ms(n)} | {vs(h, n)} | {ms(c)} | {vs(c, n)} |")
    lines += ["", f"Speedup spread over {repeats} runs ((max - min) / median), and the judge's clock's agreement"
              " (the events' speedup over the clock's, median of the runs):", ""]
    lines += [f"- {c.parent.name}: {100 * s:.1f}%, agreement {'-' if a is None else f'{a:.3f}'}" for c, s, a in spreads]
    return "\n".join(lines) + "\n"

if __name__ == "__main__":
    main()
