"""Evaluating a list of candidates one after another, each in its own worker, each result
stored the moment it exists."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from kbharness.isolate import run_isolated
from kbharness.problems import Problem
from kbharness.results import EvalRecord
from kbharness.spec import EvalSpec, Settings
from kbharness.store import Store


@dataclass(frozen=True)
class Job:
    problem: Problem
    solution: Path


def evaluate_jobs(jobs: Sequence[Job], settings: Settings, store: Store | None, cache_dir: Path,
                  on_start: Callable[[Job, int], None] = lambda job, i: None,
                  on_done: Callable[[Job, EvalRecord], None] = lambda job, rec: None) -> list[EvalRecord]:
    """Run every job; an interrupt stops the run but keeps every record already appended."""
    records = []
    for i, job in enumerate(jobs):
        on_start(job, i)
        spec = EvalSpec(job.problem.path.resolve(), job.solution.resolve(), settings, cache_dir)
        record = run_isolated(spec)
        if store is not None:
            store.append(record)
        records.append(record)
        on_done(job, record)
    return records
