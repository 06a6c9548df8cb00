"""Throughput: candidates per hour through the harness's scheduler (a pool of builders,
each candidate evaluated as soon as it is built) against a plain sequential loop
(compile, check, time, one candidate after another, each in a process started from
scratch, as ``kb run`` in a shell loop would), on the same machine in the same run,
cold cache and warm; and how much of the time after the first build the device sat idle.
The sequential loop's rate is per candidate, so ``--sequential-sample K`` measures it on K
candidates spread over the list when the whole loop would not fit a time budget.

Every candidate of the repository for the device (``cuda_fused.py`` or ``cpp_fused.py``;
``--name triton_fused.py`` for the Triton ones) is copied ``--copies`` times with a unique
trailing comment, so each copy is a distinct candidate to the content-keyed cache (a cold
build). Usage:

    python bench/throughput.py --device cuda --copies 1 --sequential-sample 3 --out bench/results/throughput_h100.md
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbharness.orchestration.jobs import Job, evaluate_jobs  # noqa: E402
from kbharness.common.spec import Settings  # noqa: E402
from kbharness.orchestration.sweep import candidates, place  # noqa: E402


def variants(name: str, copies: int, limit: int | None, into: Path, solutions: Path, problems: Path) -> list[Job]:
    """``copies`` of each candidate named ``name`` (a glob) under ``solutions``, each a fresh content
    hash, named alike however often this is called (``v0_cuda_fused.py``)."""
    originals = sorted(solutions.glob(f"level*/*/{name}"))[:limit]
    for src in originals:
        folder = into / src.parent.parent.name / src.parent.name
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(copies):
            (folder / f"v{k}_{src.name}").write_text(src.read_text() + f"\n# variant {k} {uuid.uuid4().hex}\n")
    jobs, unplaced = place(candidates([into]), problems)
    assert not unplaced, unplaced
    return jobs


def measure(label: str, jobs: list[Job], settings: Settings, cache: Path, build_jobs: int) -> dict:
    done = []
    start = time.monotonic()
    outcomes = evaluate_jobs(jobs, settings, None, cache, build_jobs=build_jobs,
                             on_done=lambda job, o: done.append(time.monotonic()))
    wall = time.monotonic() - start
    records = [o.record for o in outcomes]
    # Device busy: each evaluation's worker time less what it spent compiling itself.
    busy = sum((r.wall_s or 0.0) - (r.build_s or 0.0) for r in records)
    first_eval_start = min(t - (r.wall_s or 0.0) for t, r in zip(done, records)) - start if done else 0.0
    after_first = wall - first_eval_start
    return {"label": label, "n": len(records), "wall_s": wall, "per_hour": 3600 * len(records) / wall,
            "idle_after_first": max(0.0, 1 - busy / after_first) if after_first > 0 else 0.0,
            "correct": sum(r.correct for r in records)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--copies", type=int, default=2)
    ap.add_argument("--name", default=None, help="The candidates' file name (default cuda_fused.py, cpp_fused.py on the CPU).")
    ap.add_argument("--limit", type=int, default=None, help="Use only the first N candidates.")
    ap.add_argument("--sequential-sample", type=int, default=None,
                    help="Time the sequential loop on this many candidates, spread over the list.")
    ap.add_argument("--build-jobs", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--size", action="append", default=[], help="NAME=VALUE size override for every problem.")
    ap.add_argument("--solutions-dir", type=Path, default=ROOT / "solutions")
    ap.add_argument("--problems-dir", type=Path, default=ROOT / "problems")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    import ast

    import torch

    sizes = {k: ast.literal_eval(v) for k, v in (s.split("=", 1) for s in args.size)}
    settings = Settings(device=args.device, n_runs=100, time_budget_s=2.0, size_overrides=sizes)
    gpu = torch.cuda.get_device_name() if args.device == "cuda" and torch.cuda.is_available() else "-"
    work = Path(tempfile.mkdtemp(prefix="kb-throughput-"))
    results = []
    try:
        name = args.name or ("cuda_fused.py" if args.device == "cuda" else "cpp_fused.py")
        jobs = variants(name, args.copies, args.limit, work / "cands", args.solutions_dir, args.problems_dir)
        header = (f"{datetime.now(timezone.utc):%Y-%m-%d} · {platform.node()} · {os.cpu_count()} cores · GPU {gpu} · "
                  f"torch {torch.__version__} · {len(jobs)} candidates ({args.copies} copies of "
                  f"{len(jobs) // max(1, args.copies)} {name}) · {args.build_jobs} builders · sizes {sizes or 'as written'}")
        sample = jobs
        if args.sequential_sample and args.sequential_sample < len(jobs):
            step = len(jobs) / args.sequential_sample
            sample = [jobs[int(i * step)] for i in range(args.sequential_sample)]
        modes = [(f"sequential loop, cold cache, a fresh process each ({len(sample)} of {len(jobs)} candidates)",
                  sample, "cache_seq", 0, "0"),
                 ("harness scheduler, cold cache", jobs, "cache", args.build_jobs, "1"),
                 ("harness, warm cache", jobs, "cache", args.build_jobs, "1")]
        for label, todo, cache, builders, forkserver in modes:
            os.environ["KB_FORKSERVER"] = forkserver
            results.append(measure(label, todo, settings, work / cache, builders))
            # Written after every mode, so that a run cut short keeps what it measured.
            text = report(args.device, header, results)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text)
            print(text.splitlines()[-1] if len(results) < len(modes) else text, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(device: str, header: str, results: list[dict]) -> str:
    lines = [f"# Throughput, {device}", "", header, "",
             "| mode | candidates | correct | wall | candidates/hour | device idle after first build |",
             "|---|---|---|---|---|---|"]
    for m in results:
        lines.append(f"| {m['label']} | {m['n']} | {m['correct']} | {m['wall_s']:.0f} s | {m['per_hour']:.0f} | "
                     f"{100 * m['idle_after_first']:.0f}% |")
    if len(results) > 1:
        lines += ["", f"Cold-cache gain over the sequential loop: {results[1]['per_hour'] / results[0]['per_hour']:.2f}×."]
    return "\n".join(lines) + "\n"

if __name__ == "__main__":
    main()
