"""Whether a model runs slower on inputs in the judge's shared buffers: one reference timed in
one process, call after call, on inputs in its own allocator's memory (``own``), in a shared
buffer as the judge made it (``shared``: CUDA virtual memory on a GPU, a ``memfd`` on the host)
and in a second mapping of that buffer, as the runner maps it (``attached``). Through the
boundary, KernelBench's 2/77 (ConvTranspose3d) against itself came out 0.77x on the H200 with
the same cuDNN kernel taking 5.7 ms in the runner against 4.2 ms in one process, and the judge's
clock agreed; in one process the pair was 1.00x.

    PYTHONPATH=. python bench/shared_input.py .kernelbench/KernelBench/level2/77_*.py --out bench/results/shared_input_h200.md
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbharness.boundary import sharedmem  # noqa: E402
from kbharness.common.calls import build_model  # noqa: E402
from kbharness.common.loading import load_problem  # noqa: E402
from kbharness.common.spec import Settings  # noqa: E402
from kbharness.common.timing import timer_for  # noqa: E402
from kbharness.judge.evaluate import make_inputs  # noqa: E402

REGIMES = ("own", "shared", "attached")


def placed(inputs: list, device) -> tuple[dict[str, list], list]:
    """The inputs in each regime's memory, and the buffers that must outlive them."""
    import torch

    sets, keep = {name: [] for name in REGIMES}, []
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            for name in REGIMES:
                sets[name].append(x)
            continue
        made = sharedmem.allocate(i, tuple(x.shape), x.dtype, device)
        made.tensor.copy_(x)
        again = sharedmem.attach(made.desc, os.dup(made.fd), device)
        keep += [made, again]
        sets["own"].append(x)
        sets["shared"].append(made.tensor)
        sets["attached"].append(again.tensor)
    return sets, keep


def measure(path: Path, device, calls: int) -> dict[str, list[float]]:
    """``calls`` rounds, each timing one call in every regime, in an order that rotates."""
    import torch

    settings = Settings(device=device.type)
    problem = load_problem(path)
    model = build_model(problem.Model, problem.get_init_inputs(), settings, device)
    sets, keep = placed(make_inputs(problem, settings.seed, settings, device), device)
    timer = timer_for(device)
    times = {name: [] for name in REGIMES}
    with torch.no_grad():
        for name in REGIMES:
            model(*sets[name])
        for i in range(calls):
            for name in REGIMES[i % len(REGIMES):] + REGIMES[:i % len(REGIMES)]:
                times[name].append(timer.time(lambda: model(*sets[name]), key=name).time.call_ms)
    del sets, keep
    return times


def row(label: str, times: dict[str, list[float]]) -> str:
    own = statistics.median(times["own"])
    cells = []
    for name in REGIMES:
        q = statistics.quantiles(times[name], n=4)
        med = statistics.median(times[name])
        cells.append(f"{med:.4f} ms (IQR {100 * (q[2] - q[0]) / med:.0f}%, {med / own:.3f}x own)")
    return f"| {label} | " + " | ".join(cells) + " |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problems", nargs="+", type=Path)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    import torch

    device = torch.device(args.device)
    where = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
    lines = [f"# Inputs in the judge's shared buffers\n\n{where} · torch {torch.__version__} · "
             f"{args.calls} calls per regime, interleaved\n",
             "| problem | " + " | ".join(REGIMES) + " |", "|---" * (len(REGIMES) + 1) + "|"]
    for path in args.problems:
        lines.append(row(path.stem, measure(path, device, args.calls)))
        print(lines[-1], file=sys.stderr, flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
