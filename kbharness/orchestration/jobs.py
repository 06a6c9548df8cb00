"""Evaluating a list of candidates one after another, each in its own worker, each result
stored the moment it exists; candidates the store already has (same content, problem and
settings) are taken from it, so an interrupted run resumes where it stopped."""
from __future__ import annotations

import hashlib
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from kbharness.orchestration.backends import LocalBackend
from kbharness.orchestration.build import BuildPool
from kbharness.common.problems import Problem
from kbharness.common.results import EvalRecord, Verdict
from kbharness.common.spec import EvalSpec, Settings
from kbharness.orchestration.store import Store


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
                  on_done: Callable[[Job, Outcome], None] = lambda job, o: None,
                  build_jobs: int = 0, sandboxed: bool | None = None, language: str = "") -> list[Outcome]:
    """Run every job not already in the store (all of them with ``force``) on ``backend``
    (default: the local pool), storing each record as it arrives.

    With ``build_jobs``, the pending candidates are first compiled into the cache by that
    many parallel builders, and each is evaluated as soon as its build is done, so the GPU
    never waits on a compiler for a candidate whose build has finished. On the CPU,
    evaluation waits for every build: a compiler beside a timing would skew it.
    An interrupt stops the run; every record appended before it stays. A ``lost`` record
    (the harness lost the evaluation: a Ray worker, a wait for another process's build) is
    returned but never stored, so the next run evaluates it again. Outcomes come back in
    the jobs' order. ``sandboxed`` (None: ``KB_SANDBOX`` decides) is for the builds and the
    default backend; a given ``backend`` has its own."""
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
    order: list[int] = []
    pool = BuildPool(settings.device, cache_dir, build_jobs, settings.compile_timeout_s, sandboxed, settings.precision)

    def specs() -> Iterator[EvalSpec]:
        for i in _in_build_order(jobs, todo, settings, pool) if build_jobs and len(todo) > 1 else todo:
            order.append(i)
            yield EvalSpec(jobs[i].problem.path.resolve(), jobs[i].solution.resolve(), settings, cache_dir, language)

    try:
        for k, record in (backend or LocalBackend(sandboxed=sandboxed)).run(specs()):
            if store is not None and record.verdict is not Verdict.LOST:  # the harness's loss, not a verdict
                store.append(record)
            i = order[k]
            outcomes[i] = Outcome(record, from_store=False)
            on_done(jobs[i], outcomes[i])
    finally:
        pool.cancel()  # an interrupted run leaves no compiler behind
    return [outcomes[i] for i in sorted(outcomes)]


def _in_build_order(jobs: Sequence[Job], todo: list[int], settings: Settings, pool: BuildPool) -> Iterator[int]:
    """Job indices as their candidates' builds finish (on the CPU: after all of them)."""
    by_file: dict[str, list[int]] = {}
    for i in todo:
        by_file.setdefault(str(jobs[i].solution.resolve()), []).append(i)
    problems = {f: jobs[i[0]].problem.path.resolve() for f, i in by_file.items()}
    finished = queue.Queue()

    def build() -> None:
        try:
            for result in pool.run(list(map(Path, by_file)), problems):
                finished.put(result.solution)
        finally:
            finished.put(None)

    threading.Thread(target=build, daemon=True).start()
    order = []
    while (solution := finished.get()) is not None:
        order += by_file.pop(solution, [])
        if settings.device.startswith("cuda"):
            yield from order
            order = []
    yield from order + [i for rest in by_file.values() for i in rest]
