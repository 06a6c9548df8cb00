"""Shared fixtures: a tiny problem, a session-wide build cache, and a helper that evaluates
a candidate in a real worker process, the way `kb` does."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbharness.execution.isolate import run_isolated
from kbharness.common.spec import EvalSpec, Settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TINY_PROBLEM = FIXTURES / "problems" / "level1" / "1_Scale_shift.py"
CANDIDATES = FIXTURES / "candidates"
FAST = dict(n_trials=3, n_warmup=1, n_runs=10, min_runs=10, time_budget_s=1.0)


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory) -> Path:
    """One extension cache for the whole session (C++ builds cost ~50 s on 2 cores).

    Set KB_TEST_CACHE to keep builds between sessions while developing."""
    kept = os.environ.get("KB_TEST_CACHE")
    return Path(kept) if kept else tmp_path_factory.mktemp("kb-cache")


@pytest.fixture
def evaluate(build_cache):
    """Sandboxed as ``kb`` is by default (``sandboxed=False`` for ``--no-sandbox``)."""
    def run(candidate: str | Path, problem: Path = TINY_PROBLEM, sandboxed: bool | None = None, **overrides):
        path = Path(candidate)
        if not path.is_absolute():
            path = CANDIDATES / path
        settings = Settings(**{"device": "cpu", **FAST, **overrides})
        return run_isolated(EvalSpec(problem, path, settings, build_cache), sandboxed=sandboxed)

    return run


@pytest.fixture
def forked(monkeypatch) -> list[str]:
    """Run folders of the workers the fork server spawned: a test of the forked path must see
    them, since a server that cannot start or spawn falls back to a plain start silently."""
    from kbharness.execution import forkserver

    spawned = []
    spawn = forkserver.ForkServer.spawn

    def spy(self, run_dir, log, env):
        worker = spawn(self, run_dir, log, env)
        spawned.append(run_dir)
        return worker

    monkeypatch.setattr(forkserver.ForkServer, "spawn", spy)
    return spawned


def evaluate_here(spec: EvalSpec, run_dir: Path):
    """``evaluate`` in this process with a runner forked from it: what a test patched here
    (a language registry, a fake timer) holds on both sides of the boundary."""
    import torch

    from kbharness.judge import evaluate
    from kbharness.runner import launch

    # OpenMP's thread pool does not survive a fork (the fork server forks before any parallel
    # work; a test process has done some): the child would wait for threads it does not have.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    runner = launch.start(run_dir / "runner", None)
    try:
        return evaluate.evaluate(spec, run_dir, runner=runner)
    finally:
        runner.stop()
        torch.set_num_threads(threads)


def reference_as_candidate(problem: Path, tmp_path: Path) -> Path:
    """The problem's own source with ``ModelNew = Model``: a reference judged against itself,
    as KernelBench's references are in scripts/kernelbench.py."""
    path = tmp_path / f"ref_{problem.stem}.py"
    path.write_text(problem.read_text() + "\n\nModelNew = Model\n")
    return path
