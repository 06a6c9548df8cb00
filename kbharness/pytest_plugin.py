"""pytest plugin: ``pytest --kb-problems problems --kb-solutions solutions/`` makes each
problem/candidate pair a test item, so a team keeps its kernels under the test runner it
already has. Each item is one isolated evaluation; it fails with the CI gate's reason.
Without ``--kb-problems`` the plugin does nothing."""
from __future__ import annotations

from pathlib import Path

import pytest

from kbharness import gate
from kbharness.build import DEFAULT_CACHE_DIR
from kbharness.env import default_device
from kbharness.isolate import run_isolated
from kbharness.spec import EvalSpec, Settings
from kbharness.sweep import candidates, place


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kbharness", "kernel candidates as tests")
    group.addoption("--kb-problems", metavar="DIR", help="Problems folder; turns on candidate test items.")
    group.addoption("--kb-solutions", metavar="PATH", action="append", default=[],
                    help="Candidate files or folders (repeatable; default solutions/).")
    group.addoption("--kb-device", choices=["cuda", "cpu"], default=None, help="Default: cuda when visible.")
    group.addoption("--kb-min-speedup", type=float, default=None, help="Also fail candidates slower than this.")
    group.addoption("--kb-runs", type=int, default=100, help="Timed calls per model.")


class CandidateItem(pytest.Item):
    def __init__(self, *, job, settings: Settings, min_speedup: float | None, **kw):
        super().__init__(**kw)
        self.job, self.settings, self.min_speedup = job, settings, min_speedup

    def runtest(self) -> None:
        spec = EvalSpec(self.job.problem.path.resolve(), self.job.solution.resolve(), self.settings, DEFAULT_CACHE_DIR)
        result = gate.judge(run_isolated(spec), self.min_speedup)
        speed = result.record.speedup
        self.user_properties.append(("speedup", speed))
        if not result.passed:
            raise CandidateFailure(result.reason, result.record.log_tail)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CandidateFailure):
            reason, log = excinfo.value.args
            return f"{reason}\n{log}" if log else reason
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.job.solution, 0, f"{self.job.problem.key} {self.job.solution.name}"


class CandidateFailure(Exception):
    pass


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    problems = config.getoption("kb_problems")
    if not problems:
        return
    device = config.getoption("kb_device") or default_device()
    runs = config.getoption("kb_runs")
    settings = Settings(device=device, n_runs=runs, min_runs=min(10, runs))
    jobs, unplaced = place(candidates([Path(p) for p in config.getoption("kb_solutions") or ["solutions"]]),
                           Path(problems))
    if unplaced:
        raise pytest.UsageError(f"{unplaced[0].path}: {unplaced[0].reason}")
    for job in jobs:
        items.append(CandidateItem.from_parent(session, name=f"{job.problem.key}::{job.solution.name}", job=job,
                                               settings=settings, min_speedup=config.getoption("kb_min_speedup")))
