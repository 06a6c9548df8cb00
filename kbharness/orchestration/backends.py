"""Where evaluations run: a local pool (one worker per visible GPU) or a Ray cluster.

A backend takes evaluation specs and yields ``(index, record)`` as each finishes, in
whatever order they finish; the driver alone writes the store. Every evaluation still
runs in its own child process (``isolate.run_isolated``), so a backend only decides
which machine and which GPU.
"""
from __future__ import annotations

import itertools
import queue
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable, Iterator

from kbharness.execution.isolate import Stopped, failure_record, run_isolated
from kbharness.common.results import EvalRecord, Verdict
from kbharness.common.spec import EvalSpec
from kbharness.orchestration.utilization import Span

BACKENDS = ("local", "ray")
# Times Ray retries a task whose worker was lost before the evaluation is recorded as lost.
DEFAULT_MAX_RETRIES = 2


def visible_gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


class LocalBackend:
    """One worker thread per GPU, each handing its evaluations to a fresh child pinned to
    that GPU. On the CPU one worker: two timings sharing cores would disturb each other.
    ``sandboxed`` is ``run_isolated``'s. ``spans`` holds where and when each evaluation ran
    (``utilization``)."""

    def __init__(self, workers: int | None = None, sandboxed: bool | None = None):
        self.workers, self.sandboxed = workers, sandboxed
        self.spans: list[Span] = []

    def _evaluate(self, spec: EvalSpec, gpu: int | None, stop: threading.Event | None = None) -> EvalRecord:
        start = time.monotonic()
        record = run_isolated(spec, gpu=gpu, stop=stop, sandboxed=self.sandboxed)
        self.spans.append(Span(f"cuda:{gpu or 0}" if spec.settings.device.startswith("cuda") else spec.settings.device,
                               start, time.monotonic(), record.build_s or 0.0))
        return record

    def run(self, specs: Iterable[EvalSpec]) -> Iterator[tuple[int, EvalRecord]]:
        """Specs may arrive as they become ready (a generator fed by builds); each is
        numbered in arrival order."""
        stream = iter(specs)
        first = next(stream, None)
        if first is None:
            return
        on_gpu = first.settings.device.startswith("cuda")
        n = self.workers or (max(1, visible_gpus()) if on_gpu else 1)
        numbered = enumerate(itertools.chain([first], stream))
        if n == 1:
            for i, spec in numbered:
                yield i, self._evaluate(spec, None)
            return
        lock = threading.Lock()
        done: queue.Queue = queue.Queue()
        stop = threading.Event()
        evaluating: set[threading.Thread] = set()

        def worker(gpu: int) -> None:
            me = threading.current_thread()
            try:
                while not stop.is_set():
                    with lock:
                        item = next(numbered, None)
                    if item is None:
                        return
                    i, spec = item
                    evaluating.add(me)
                    done.put((i, self._evaluate(spec, gpu if on_gpu else None, stop)))
                    evaluating.discard(me)
            except Stopped:
                pass
            finally:
                done.put(None)

        for g in range(n):
            threading.Thread(target=worker, args=(g,), daemon=True).start()
        live = n
        try:
            while live:
                item = done.get()
                if item is None:
                    live -= 1
                else:
                    yield item
        finally:
            # Interrupted (or abandoned by the caller): the workers still evaluating are killed,
            # not left running. A thread waiting for its next spec (a build) is not waited for.
            stop.set()
            for t in list(evaluating):
                t.join()


def evaluate_shipped(spec_json: str, problem_text: bytes, solution_bytes: bytes) -> dict:
    """Runs on a Ray worker: writes the problem and candidate to a local folder (the
    cluster need not share a file system), builds and evaluates there, and returns the
    record with the driver's paths."""
    spec = EvalSpec.from_json(spec_json)
    with tempfile.TemporaryDirectory(prefix="kb-ray-") as tmp:
        problem = Path(tmp) / spec.problem_path.parent.name / spec.problem_path.name
        problem.parent.mkdir()
        problem.write_bytes(problem_text)
        solution = Path(tmp) / spec.solution_path.name
        solution.write_bytes(solution_bytes)
        record = run_isolated(replace(spec, problem_path=problem, solution_path=solution))
    return replace(record, problem_path=str(spec.problem_path), solution_path=str(spec.solution_path)).to_dict()


class RayBackend:
    """Each evaluation a Ray task asking for one GPU (or one CPU): a worker lost mid-task is
    retried by Ray up to ``max_retries`` times, then the evaluation is recorded as lost.
    Ray workers sandbox their evaluations unless ``sandboxed`` is False (their ``KB_SANDBOX``
    is then set to 0)."""

    def __init__(self, address: str | None = None, max_retries: int = DEFAULT_MAX_RETRIES, num_cpus: int | None = None,
                 task: Callable[[str, bytes, bytes], dict] = evaluate_shipped, sandboxed: bool | None = None):
        self.address, self.max_retries, self.num_cpus, self.task = address, max_retries, num_cpus, task
        self.sandboxed = sandboxed

    def run(self, specs: Iterable[EvalSpec]) -> Iterator[tuple[int, EvalRecord]]:
        import ray

        specs = list(specs)
        if not ray.is_initialized():
            if self.address:
                ray.init(address=self.address, log_to_driver=False)
            else:
                ray.init(num_cpus=self.num_cpus, log_to_driver=False, include_dashboard=False)
        remote = ray.remote(self.task)
        pending = {}
        for i, spec in enumerate(specs):
            resources = {"num_gpus": 1} if spec.settings.device.startswith("cuda") else {"num_cpus": 1}
            if self.sandboxed is False:
                resources["runtime_env"] = {"env_vars": {"KB_SANDBOX": "0"}}
            ref = remote.options(max_retries=self.max_retries, retry_exceptions=False, **resources).remote(
                spec.to_json(), Path(spec.problem_path).read_bytes(), Path(spec.solution_path).read_bytes())
            pending[ref] = (i, spec)
        while pending:
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            i, spec = pending.pop(ref)
            try:
                yield i, EvalRecord.from_dict(ray.get(ref))
            except (ray.exceptions.RayError, OSError) as e:
                first = (str(e).strip().splitlines() or [""])[0][:200]
                message = f"lost after {self.max_retries + 1} attempts: {type(e).__name__}: {first}"
                yield i, failure_record(spec, Verdict.LOST, message, "", 0.0)


def make_backend(name: str, address: str | None = None, max_retries: int = DEFAULT_MAX_RETRIES,
                 sandboxed: bool | None = None):
    if name == "ray":
        return RayBackend(address=address, max_retries=max_retries, sandboxed=sandboxed)
    return LocalBackend(sandboxed=sandboxed)
