"""Several GPUs of one host: the same candidates swept on 1, 2, 4, ... GPUs through the local
pool (one worker a GPU), each sweep from a cold cache, and once through Ray (``--ray``, a local
cluster, one GPU a task). Per sweep: candidates per hour, each GPU's idle fraction
(``utilization``), whether every verdict equals the one-GPU sweep's, and how far each speedup
moved from its one-GPU value (the goal: within 2%). Every CUDA candidate of the repository is
copied ``--copies`` times under the same names for every sweep (``throughput.variants``), with
a fresh content hash, so each sweep compiles afresh and its records pair up with the one-GPU
sweep's by problem and name.

    python bench/multi_gpu.py --gpus 1 2 4 8 --copies 2 --ray --out bench/results/multi_gpu_h200.md
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kbharness.orchestration.jobs import Job, evaluate_jobs  # noqa: E402
from kbharness.common.spec import Settings  # noqa: E402
from kbharness.orchestration.utilization import idle_fractions  # noqa: E402
from throughput import variants  # noqa: E402


def sweep(label: str, jobs: list[Job], settings: Settings, cache: Path, backend, build_jobs: int) -> dict:
    start = time.monotonic()
    outcomes = evaluate_jobs(jobs, settings, None, cache, backend=backend, build_jobs=build_jobs)
    end = time.monotonic()
    records = {(o.record.problem, Path(o.record.solution_path).name): o.record for o in outcomes}
    return {"label": label, "n": len(records), "wall_s": end - start, "per_hour": 3600 * len(records) / (end - start),
            "idle": idle_fractions(getattr(backend, "spans", []), start, end), "records": records}


def agreement(base: dict, other: dict) -> dict:
    """Verdicts equal to ``base``'s, and each speedup's relative move from its ``base`` value."""
    same = sum(other[k].verdict is r.verdict for k, r in base.items() if k in other)
    moves = [abs(other[k].speedup / r.speedup - 1) for k, r in base.items()
             if k in other and r.speedup and other[k].speedup]
    return {"same": same, "of": len(base), "median_move": statistics.median(moves) if moves else 0.0,
            "max_move": max(moves, default=0.0)}


def report(header: str, sweeps: list[dict]) -> str:
    base = sweeps[0]["records"]
    lines = ["# Several GPUs of one host", "", header, "",
             "| sweep | candidates | wall | candidates/hour | GPU idle | verdicts as on 1 GPU | speedup moved (median, max) |",
             "|---|---|---|---|---|---|---|"]
    for s in sweeps:
        a = agreement(base, s["records"])
        idle = ", ".join(f"{d} {100 * f:.0f}%" for d, f in s["idle"].items()) or "-"
        lines.append(f"| {s['label']} | {s['n']} | {s['wall_s']:.0f} s | {s['per_hour']:.0f} | {idle} | "
                     f"{a['same']}/{a['of']} | {100 * a['median_move']:.1f}%, {100 * a['max_move']:.1f}% |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--ray", action="store_true", help="Also sweep through Ray on every GPU (needs ray).")
    ap.add_argument("--build-jobs", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    import torch

    from kbharness.orchestration.backends import LocalBackend, RayBackend

    visible = torch.cuda.device_count()
    counts = [n for n in args.gpus if n <= visible]
    if not counts or counts[0] != 1:
        sys.exit(f"needs 1 GPU first and at most {visible}: --gpus {' '.join(map(str, args.gpus))}")
    originals = sorted((ROOT / "solutions").glob("level*/*/cuda_*.py"))  # for the header; variants copies them
    settings = Settings(device="cuda", n_runs=100, time_budget_s=2.0)
    header = (f"{datetime.now(timezone.utc):%Y-%m-%d} · {torch.cuda.get_device_name()} × {visible} · "
              f"{os.cpu_count()} cores · {len(originals)} CUDA candidates × {args.copies} copies · "
              f"{args.build_jobs} builders · each sweep from a cold cache")
    work = Path(tempfile.mkdtemp(prefix="kb-multi-gpu-"))
    sweeps = []
    try:
        plans = [(f"local, {n} GPU{'s' * (n > 1)}", LocalBackend(workers=n)) for n in counts]
        if args.ray:
            plans.append((f"ray, {visible} GPUs", RayBackend()))
        for k, (label, backend) in enumerate(plans):
            jobs = variants("cuda_*.py", args.copies, None, work / f"cands{k}", ROOT / "solutions", ROOT / "problems")
            build_jobs = 0 if label.startswith("ray") else args.build_jobs
            sweeps.append(sweep(label, jobs, settings, work / f"cache{k}", backend, build_jobs))
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(report(header, sweeps))  # after every sweep: a run cut short keeps what it measured
            print(report(header, sweeps).splitlines()[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
