"""What the judge/runner boundary costs a call: a checked call of an identity candidate through
the runner (inputs written into the judge's shared buffer, the call, the output copied into
the judge's output buffer, the reply) against the same call made in one process, for
output sizes from 4 KiB to 1 GiB; host shared memory (``memfd``) on the CPU, CUDA virtual
memory exported as a descriptor on the GPU.

    PYTHONPATH=. python bench/exchange.py --device cuda --out bench/results/exchange_h200.md
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbharness.runner import launch  # noqa: E402
from kbharness.common.spec import EvalSpec, Settings  # noqa: E402

SIZES = (2**10, 2**16, 2**20, 2**24, 2**28)  # float32 elements: 4 KiB .. 1 GiB
REPEATS = 7
_CANDIDATE = "import torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x + 0\n"
_PROBLEM = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, x):\n"
            "        return x + 0\ndef get_inputs():\n    return [torch.randn(16)]\ndef get_init_inputs():\n    return []\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kb-exchange-"))
    (folder / "problem.py").write_text(_PROBLEM)
    (folder / "candidate.py").write_text(_CANDIDATE)
    spec = EvalSpec(folder / "problem.py", folder / "candidate.py", Settings(device=args.device), folder / "cache")
    runner = launch.start(folder / "runner", None)  # before this process touches CUDA

    import torch

    from kbharness.judge.candidate import RemoteCandidate
    from kbharness.common.calls import sync

    device = torch.device(args.device)
    cand = RemoteCandidate(runner, device)
    cand.start(spec.to_json(), str(folder / "runner"))
    cand.load()
    cand.construct([], True)
    rows = []
    for n in SIZES:
        x = torch.randn(n, device=device)
        like = x + 0
        cand.call("bench", [x], 1, like)  # buffers made and mapped once
        remote, local = [], []
        for _ in range(REPEATS):
            sync(device)
            t0 = time.perf_counter_ns()
            out = cand.call("bench", [x], 1, like).out
            t1 = time.perf_counter_ns()
            assert torch.equal(out, like)
            t1 = time.perf_counter_ns()
            y = (x.clone() + 0).clone()
            sync(device)
            t2 = time.perf_counter_ns()
            remote.append((t1 - t0) / 1e6)
            local.append((t2 - t1) / 1e6)
            del out, y
        r, loc = statistics.median(remote), statistics.median(local)
        rows.append((n * 4, r, loc, r - loc))
        print(f"{n * 4 / 2**20:10.3f} MiB  through the runner {r:8.3f} ms  in process {loc:8.3f} ms", flush=True)
    runner.stop()
    kind = "CUDA virtual memory (cuMemCreate, POSIX descriptor)" if device.type == "cuda" else "host memfd"
    name = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
    lines = [f"# The judge/runner exchange, {args.device}", "",
             f"{datetime.now(timezone.utc):%Y-%m-%d} · {name} · torch {torch.__version__} · buffers: {kind}", "",
             "A checked call of an identity candidate (`x + 0`), median of 7: through the runner (the judge writes",
             "the input into its shared buffer, the runner calls and copies the output into the judge's buffer,",
             "the judge compares) against the same copies and call in one process.", "",
             "| output | through the runner | in one process | boundary's cost |", "|---|---|---|---|"]
    for size, r, loc, extra in rows:
        lines.append(f"| {size / 2**20:.3g} MiB | {r:.3f} ms | {loc:.3f} ms | {extra:+.3f} ms |")
    text = "\n".join(lines) + "\n\nCommand: `PYTHONPATH=. python bench/exchange.py --device " + args.device + "`\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
