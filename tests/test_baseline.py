"""Reference-only timing: one child times the problems in turn; a crash or hang costs one entry."""
from pathlib import Path

import pytest

from kbharness.orchestration import baseline
from kbharness.common.problems import discover
from kbharness.common.spec import Settings

BODY = '''"""{doc}"""
import os
import time
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        {action}
        return x * 2


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
'''


def _suite(root: Path, actions: list[str]) -> list:
    (root / "level1").mkdir(parents=True)
    for i, action in enumerate(actions, 1):
        (root / "level1" / f"{i}_P{i}.py").write_text(BODY.format(doc=f"problem {i}", action=action))
    return discover(root)


def test_a_crash_or_hang_costs_its_own_entry_and_the_rest_are_timed(tmp_path):
    problems = _suite(tmp_path, ["pass", "os._exit(3)", "pass", "time.sleep(60)", "pass"])
    settings = Settings(device="cpu", n_warmup=1, n_runs=3, min_runs=3, time_budget_s=1, timeout_s=12)
    got = {b.problem: b for b in baseline.run(problems, settings)}
    assert list(got) == ["1/1", "1/2", "1/3", "1/4", "1/5"]
    assert got["1/2"].error.startswith("exit 3") and not got["1/2"].times_ms
    assert got["1/4"].error.startswith("timeout after 12 s")
    for key in ("1/1", "1/3", "1/5"):
        assert len(got[key].times_ms) == 3 and not got[key].error and got[key].env["torch"]


def test_a_baseline_is_read_back_and_refused_on_another_gpu(tmp_path):
    done = [baseline.Baseline("1/1", "P1", (1.0, 2.0, 3.0), env={"gpu": "NVIDIA H100 80GB HBM3"}),
            baseline.Baseline("1/2", "P2", error="exit 3")]
    path = tmp_path / "baseline_cuda.json"
    baseline.write(done, path, Settings(device="cuda"))
    assert baseline.read(path, "NVIDIA H100 80GB HBM3") == {"1/1": 2.0}
    with pytest.raises(ValueError, match=r"baseline_cuda.json: timed on NVIDIA H100 80GB HBM3, not on this NVIDIA H200"):
        baseline.read(path, "NVIDIA H200")
    path.write_text('{"problems": []}')
    with pytest.raises(ValueError, match=r"baseline_cuda.json: not a baseline file \(KeyError"):
        baseline.read(path, None)
