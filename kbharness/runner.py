"""Evaluating a list of candidates one after another, each in its own worker, each result
stored the moment it exists; candidates the store already has (same content, problem and
settings) are taken from it, so an interrupted run resumes where it stopped."""
from __future__ import annotations

import hashlib
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

    def key(self, settings: Settings) -> tuple[str, str, str]:
        sha = hashlib.sha256(self.solution.read_bytes()).hexdigest()
        return (self.problem.key, sha, settings.key())


@dataclass(frozen=True)
class Outcome:
    record: EvalRecord
    from_store: bool


def evaluate_jobs(jobs: Sequence[Job], settings: Settings, store: Store | None, cache_dir: Path,
                  force: bool = False,
                  on_start: Callable[[Job, int], None] = lambda job, i: None,
                  on_done: Callable[[Job, Outcome], None] = lambda job, o: None) -> list[Outcome]:
    """Run every job not already in the store (all of them with ``force``).

    An interrupt stops the run; every record appended before it stays."""
    stored = {} if store is None or force else {(r.problem, r.solution_sha256, r.settings_key): r for r in store}
    outcomes = []
    for i, job in enumerate(jobs):
        previous = stored.get(job.key(settings))
        if previous is not None:
            outcome = Outcome(previous, from_store=True)
        else:
            on_start(job, i)
            spec = EvalSpec(job.problem.path.resolve(), job.solution.resolve(), settings, cache_dir)
            record = run_isolated(spec)
            if store is not None:
                store.append(record)
            outcome = Outcome(record, from_store=False)
        outcomes.append(outcome)
        on_done(job, outcome)
    return outcomes
