"""Evaluating a list of candidates one after another, each in its own worker, each result
stored the moment it exists; candidates the store already has (same content, problem and
settings) are taken from it, so an interrupted run resumes where it stopped."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from kbharness.backends import LocalBackend
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
                  force: bool = False, backend=None,
                  on_done: Callable[[Job, Outcome], None] = lambda job, o: None) -> list[Outcome]:
    """Run every job not already in the store (all of them with ``force``) on ``backend``
    (default: the local pool), storing each record as it arrives.

    An interrupt stops the run; every record appended before it stays. Outcomes come back
    in the jobs' order."""
    stored = {} if store is None or force else {(r.problem, r.solution_sha256, r.settings_key): r for r in store}
    outcomes: dict[int, Outcome] = {}
    todo = []
    for i, job in enumerate(jobs):
        previous = stored.get(job.key(settings))
        if previous is not None:
            outcomes[i] = Outcome(previous, from_store=True)
            on_done(job, outcomes[i])
        else:
            todo.append(i)
    specs = [EvalSpec(jobs[i].problem.path.resolve(), jobs[i].solution.resolve(), settings, cache_dir) for i in todo]
    for k, record in (backend or LocalBackend()).run(specs):
        if store is not None:
            store.append(record)
        i = todo[k]
        outcomes[i] = Outcome(record, from_store=False)
        on_done(jobs[i], outcomes[i])
    return [outcomes[i] for i in sorted(outcomes)]
