"""Reference-only timing: what each problem costs as written, per GPU, for the suite's baseline file.

Each problem is timed in its own process (``python -m kbharness.baseline``), with the
same timer and protocol as an evaluation (fresh inputs per call, cache flushed, events),
so a problem that crashes or exhausts memory costs one entry, not the run.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from kbharness.problems import Problem
from kbharness.spec import Settings


@dataclass(frozen=True)
class Baseline:
    problem: str
    name: str
    times_ms: tuple[float, ...] = ()
    error: str = ""
    env: dict[str, Any] = field(default_factory=dict)

    @property
    def median_ms(self) -> float | None:
        from kbharness.results import Timing

        return Timing(self.times_ms).median_ms if self.times_ms else None


def measure(problem_path: Path, settings: Settings) -> list[float]:
    """Per-call times of the reference, in ms; runs in the child process."""
    import torch

    from kbharness import evaluate
    from kbharness.loading import load_problem
    from kbharness.timing import Timer

    device = torch.device(settings.device)
    problem = load_problem(problem_path, settings.size_overrides)
    model = evaluate.build_model(problem.Model, problem.get_init_inputs(), settings, device)
    timer = Timer(device)
    times = []
    with torch.no_grad():
        warm = evaluate.make_inputs(problem, settings.seed, settings, device)
        for _ in range(settings.n_warmup):
            model(*evaluate.clone(warm))
        deadline = time.perf_counter() + settings.time_budget_s
        for i in range(settings.n_runs):
            inputs = evaluate.make_inputs(problem, settings.seed + 10_000 + i, settings, device)
            timer.sync()
            times.append(timer.time(lambda: model(*inputs)).time.call_ms)
            if i + 1 >= settings.min_runs and time.perf_counter() > deadline:
                break
    return times


def run(problems: list[Problem], settings: Settings) -> Iterator[Baseline]:
    for p in problems:
        cmd = [sys.executable, "-m", "kbharness.baseline", str(p.path.resolve()), json.dumps(settings.to_dict())]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=settings.timeout_s)
        except subprocess.TimeoutExpired:
            yield Baseline(p.key, p.name, error=f"timeout after {settings.timeout_s:g} s")
            continue
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            yield Baseline(p.key, p.name, error=f"exit {proc.returncode}: {tail[:300]}")
            continue
        result = json.loads(lines[-1])
        yield Baseline(p.key, p.name, tuple(result["times_ms"]), env=result["env"])


def write(baselines: list[Baseline], path: Path, settings: Settings) -> None:
    """A self-describing file: GPU, versions, date, settings, and every problem's raw times."""
    env = next((b.env for b in baselines if b.env), {})
    doc = {
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "env": env,
        "settings": settings.to_dict(),
        "problems": [{**asdict(b), "median_ms": b.median_ms} for b in baselines],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")


def _child(problem_path: str, settings_json: str) -> None:
    from kbharness import env

    settings = Settings(**json.loads(settings_json))
    times = measure(Path(problem_path), settings)
    print(json.dumps({"times_ms": times, "env": env.describe(settings.device)}))


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
