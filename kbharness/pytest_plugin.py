"""pytest plugin: ``pytest --kb-problems problems --kb-solutions solutions/`` makes each
problem/candidate pair a test item, so a team keeps its kernels under the test runner it
already has. Each item is one isolated evaluation; it fails with the CI gate's reason.

With ``--kb-problems`` only the candidates are collected (the folders of ``--kb-solutions``
replace the test paths, so running from a repository root does not pull in its own tests),
each file as a real collector, so pytest's "collected N items" counts them. Usage mistakes
(an unplaced candidate, an unknown ``--kb-size`` constant, ``--kb-device cuda`` without a
GPU) stop pytest before anything runs. Without ``--kb-problems`` the plugin does nothing."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from kbharness.reporting import gate
from kbharness.execution import sandbox
from kbharness.common.buildcache import DEFAULT_CACHE_DIR
from kbharness.common.env import default_device
from kbharness.execution.isolate import run_isolated
from kbharness.orchestration.jobs import Job
from kbharness.common.spec import EvalSpec, Settings, SpecError, check_size_overrides, default, parse_sizes
from kbharness.orchestration.sweep import SweepError, candidates, place



@dataclass(frozen=True)
class _Plan:
    """What ``--kb-*`` asked for: the candidates by resolved path, their settings, the folders to collect."""

    jobs: dict[Path, Job]
    settings: Settings
    roots: list[Path]


_PLAN = pytest.StashKey[_Plan]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kbharness", "kernel candidates as tests")
    group.addoption("--kb-problems", metavar="DIR", help="Problems folder; turns on candidate test items.")
    group.addoption("--kb-solutions", metavar="PATH", action="append", default=[],
                    help="Candidate files or folders (repeatable; default solutions/).")
    group.addoption("--kb-device", choices=["cuda", "cpu"], default=None, help="Default: cuda when visible.")
    group.addoption("--kb-min-speedup", type=float, default=None, help="Also fail candidates slower than this.")
    group.addoption("--kb-runs", type=int, default=100, help="Timed calls per model.")
    group.addoption("--kb-size", metavar="NAME=VALUE", action="append", default=[],
                    help="Override a problem's module constant, as kb run --size (repeatable).")
    group.addoption("--kb-no-sandbox", action="store_true",
                    help="Run candidates without the bwrap sandbox, as kb run --no-sandbox.")


def pytest_configure(config: pytest.Config) -> None:
    """Place every candidate and check the options once, before collection."""
    problems = config.getoption("kb_problems")
    if not problems:
        return
    paths = [Path(p) for p in config.getoption("kb_solutions") or ["solutions"]]
    try:
        jobs, unplaced = place(candidates(paths), Path(problems))
        settings = _settings(config)
        for problem_path in dict.fromkeys(j.problem.path for j in jobs):
            check_size_overrides(problem_path, settings.size_overrides)
        if sandbox.wanted(_sandboxed(config)):
            sandbox.check()
    except (SweepError, SpecError) as e:
        raise pytest.UsageError(str(e)) from None
    except sandbox.SandboxError as e:
        raise pytest.UsageError(str(e).replace("--no-sandbox", "--kb-no-sandbox")) from None
    if unplaced:
        raise pytest.UsageError(f"{unplaced[0].path}: {unplaced[0].reason}")
    config.stash[_PLAN] = _Plan({job.solution.resolve(): job for job in jobs}, settings,
                                [p if p.is_dir() else p.parent for p in paths])


def _settings(config: pytest.Config) -> Settings:
    device = config.getoption("kb_device")
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SpecError("--kb-device cuda: no GPU visible to torch here (torch.cuda.is_available() is False)")
    runs = config.getoption("kb_runs")
    return Settings(device=device or default_device(), n_runs=runs, min_runs=min(default("min_runs"), max(runs, 1)),
                    size_overrides=parse_sizes(config.getoption("kb_size"), "--kb-size"))


def _sandboxed(config: pytest.Config) -> bool | None:
    return False if config.getoption("kb_no_sandbox") else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> bool | None:
    """Collect the candidates' folders instead of the test paths."""
    plan = session.config.stash.get(_PLAN, None)
    if plan is None:
        return None
    session.perform_collect([str(p) for p in plan.roots])
    return True


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under the candidates' folders, everything that is neither a candidate nor leads to one."""
    plan = config.stash.get(_PLAN, None)
    if plan is None:
        return None
    path = collection_path.resolve()
    return not (path in plan.jobs or any(path in f.parents for f in plan.jobs))


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    plan = parent.config.stash.get(_PLAN, None)
    job = plan.jobs.get(file_path.resolve()) if plan else None
    return CandidateFile.from_parent(parent, path=file_path, job=job) if job else None


class CandidateFile(pytest.File):
    """A candidate file; its one item is the evaluation against its problem."""

    def __init__(self, *, job: Job, **kw):
        super().__init__(**kw)
        self.job = job

    def collect(self):
        yield CandidateItem.from_parent(self, name=self.job.problem.key, job=self.job)


class CandidateItem(pytest.Item):
    def __init__(self, *, job: Job, **kw):
        super().__init__(**kw)
        self.job = job

    def runtest(self) -> None:
        spec = EvalSpec(self.job.problem.path.resolve(), self.job.solution.resolve(), self.config.stash[_PLAN].settings,
                        DEFAULT_CACHE_DIR)
        result = gate.judge(run_isolated(spec, sandboxed=_sandboxed(self.config)), self.config.getoption("kb_min_speedup"))
        self.user_properties.append(("speedup", result.record.speedup))
        if not result.passed:
            raise CandidateFailure(result.reason, result.record.log_tail)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CandidateFailure):
            reason, log = excinfo.value.args
            return f"{reason}\n{log}" if log else reason
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"{self.job.problem.key} {self.job.solution.name}"


class CandidateFailure(Exception):
    pass
