"""Backends: the local pool and a real local Ray cluster give the same verdicts; a Ray
worker lost mid-task is retried, then recorded as lost."""
import os
import sys
from pathlib import Path

import pytest

from conftest import CANDIDATES, FAST, TINY_PROBLEM
from kbharness.backends import LocalBackend, RayBackend, evaluate_shipped
from kbharness.results import Verdict
from kbharness.spec import EvalSpec, Settings

ray = pytest.importorskip("ray")
NAMES = ["correct.py", "wrong.py", "runtime_error.py", "no_modelnew.py"]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()


def _specs(cache: Path) -> list[EvalSpec]:
    settings = Settings(device="cpu", **FAST)
    return [EvalSpec(TINY_PROBLEM, CANDIDATES / n, settings, cache) for n in NAMES]


def test_ray_gives_the_local_verdicts_with_the_drivers_paths(cluster, build_cache):
    specs = _specs(build_cache)
    local = dict(LocalBackend().run(specs))
    remote = dict(RayBackend().run(specs))
    assert sorted(remote) == [0, 1, 2, 3]
    assert [remote[i].verdict for i in range(4)] == [local[i].verdict for i in range(4)] == [
        Verdict.CORRECT, Verdict.INCORRECT, Verdict.RUNTIME_ERROR, Verdict.LOAD_ERROR]
    assert [Path(remote[i].solution_path).name for i in range(4)] == NAMES
    assert remote[0].solution_sha256 == local[0].solution_sha256 and remote[0].problem == "1/1"


def dies_once(marker: Path):
    def task(spec_json, problem_text, solution_bytes):
        if not marker.exists():
            marker.write_text("died")
            os._exit(1)
        return evaluate_shipped(spec_json, problem_text, solution_bytes)
    return task


def always_dies(spec_json, problem_text, solution_bytes):
    os._exit(1)


def test_a_lost_worker_is_retried_then_recorded_as_lost(cluster, build_cache, tmp_path):
    spec = _specs(build_cache)[:1]
    [(_, retried)] = RayBackend(max_retries=1, task=dies_once(tmp_path / "marker")).run(spec)
    assert (tmp_path / "marker").exists() and retried.verdict is Verdict.CORRECT
    [(_, lost)] = RayBackend(max_retries=1, task=always_dies).run(spec)
    assert lost.verdict is Verdict.LOST
    assert lost.message.startswith("lost after 2 attempts") and lost.problem == "1/1"
