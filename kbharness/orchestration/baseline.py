"""Reference-only timing: what each problem costs as written, per GPU, for the suite's baseline file.

Problems are timed in a child process (``python -m kbharness.orchestration.baseline``), one after the
other, with the same timer and protocol as an evaluation (fresh inputs per call, cache
flushed, events). The child prints one line per problem, so a problem that crashes or
hangs costs its own entry: the parent records it and starts a new child at the next one,
and the suite pays for importing torch once rather than once per problem.
"""
from __future__ import annotations

import json
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from kbharness.execution.isolate import kill_group
from kbharness.common.problems import Problem
from kbharness.common.spec import Settings


@dataclass(frozen=True)
class Baseline:
    problem: str
    name: str
    times_ms: tuple[float, ...] = ()
    error: str = ""
    env: dict[str, Any] = field(default_factory=dict)

    @property
    def median_ms(self) -> float | None:
        from kbharness.common.results import Timing

        return Timing(self.times_ms).median_ms if self.times_ms else None


def measure(problem_path: Path, settings: Settings) -> list[float]:
    """Per-call times of the reference, in ms; runs in the child process."""
    import torch

    from kbharness.judge import evaluate
    from kbharness.common.loading import load_problem
    from kbharness.common.results import Timing
    from kbharness.common.timing import timer_for

    device = torch.device(settings.device)
    problem = load_problem(problem_path, settings.size_overrides)
    model, _ = evaluate.build_reference(problem, problem.get_init_inputs(), settings, device, evaluate.Findings())
    timer = timer_for(device)
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
            if i + 1 >= settings.min_runs and (time.perf_counter() > deadline or settings.target_ci > 0
                                               and Timing(tuple(times)).ci_rel <= settings.target_ci):
                break
    return times


def run(problems: list[Problem], settings: Settings) -> Iterator[Baseline]:
    pending = list(problems)
    while pending:
        cmd = [sys.executable, "-m", "kbharness.orchestration.baseline", json.dumps(settings.to_dict()),
               *[str(p.path.resolve()) for p in pending]]
        with tempfile.TemporaryFile("w+") as err, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err,
                                                                     text=True, start_new_session=True) as proc:
            ended = False
            with selectors.DefaultSelector() as sel:
                sel.register(proc.stdout, selectors.EVENT_READ)
                while pending and sel.select(timeout=settings.timeout_s):
                    line = proc.stdout.readline()
                    if not line:
                        ended = True
                        break
                    p, result = pending.pop(0), json.loads(line)
                    yield Baseline(p.key, p.name, tuple(result["times_ms"]), env=result["env"])
            if not pending:
                continue
            if ended:
                failure = f"exit {proc.wait()}"
            else:
                kill_group(proc)
                failure = f"timeout after {settings.timeout_s:g} s"
            err.seek(0)
            tail = (err.read().strip().splitlines() or ["no output"])[-1]
            p = pending.pop(0)
            yield Baseline(p.key, p.name, error=f"{failure}: {tail[:300]}")


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


def read(path: Path, gpu: str | None) -> dict[str, float]:
    """Each problem's reference median from a baseline file, refused when it was timed on
    another GPU: an H100's times set against an H200's ceilings would misstate the SOL."""
    try:
        doc = json.loads(Path(path).read_text())
        made_on = doc["env"].get("gpu")
        times = {p["problem"]: p["median_ms"] for p in doc["problems"] if p.get("median_ms") is not None}
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path}: not a baseline file ({type(e).__name__}: {e})") from None
    if gpu and made_on != gpu:
        raise ValueError(f"{path}: timed on {made_on or 'the CPU'}, not on this {gpu}; "
                         "pass --baseline with a file made on this GPU (kb baseline)")
    return times


def _child(settings_json: str, problem_paths: list[str]) -> None:
    from kbharness.common import env

    settings = Settings(**json.loads(settings_json))
    described = None
    for path in problem_paths:
        times = measure(Path(path), settings)
        described = described or env.describe(settings.device)
        print(json.dumps({"times_ms": times, "env": described}), flush=True)


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2:])
