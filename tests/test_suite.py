"""The repository's own problems and candidates: every problem loads and its reference runs
at reduced size on the CPU, and every CPU candidate is correct under the default check.

Sizes are shrunk through the documented hook (module-constant overrides), never by
editing the problem files."""

import pytest
import torch

from conftest import ROOT
from kbharness.common.loading import load_problem
from kbharness.common.problems import discover, solutions_for
from kbharness.common.results import Verdict

SMALL = {
    "1/1": {"N": 64},
    "1/2": {"batch_size": 2, "height": 16, "width": 16},
    "1/3": {"batch_size": 4, "dim": 256},
    "1/4": {"batch_size": 4, "dim": 256},
    "1/5": {"batch_size": 2, "dim1": 8, "dim2": 8},
    "1/6": {"batch_size": 2, "dim1": 16, "dim2": 16},
    "1/7": {"M": 256, "K": 16, "N": 16},
    "1/8": {"batch_size": 2, "M": 16, "K": 8, "N": 16},
    "1/9": {"M": 32, "K": 64, "N": 16},
    "1/10": {"M": 64, "K": 128},
    "1/11": {"batch_size": 2, "in_channels": 4, "out_channels": 8, "length": 64},
    "1/12": {"batch_size": 1, "in_channels": 2, "out_channels": 4, "depth": 8, "height": 8, "width": 8},
    "1/13": {"batch_size": 2, "channels": 4, "height": 16, "width": 16},
    "1/14": {"batch_size": 2, "in_channels": 8, "out_channels": 4, "height": 8, "width": 8},
    "1/15": {"batch_size": 4, "dim": 256},
    "1/16": {"batch_size": 4, "dim": 256},
    "1/17": {"batch_size": 4, "dim": 256},
    "1/18": {"batch_size": 4, "dim": 256},
    "1/19": {"batch_size": 4, "dim": 256},
    "1/20": {"batch_size": 4, "dim": 256},
    "1/21": {"batch_size": 2, "features": 4, "dim1": 8, "dim2": 8},
    "1/22": {"batch_size": 2, "features": 8, "num_groups": 2, "dim1": 8, "dim2": 8},
    "1/23": {"batch_size": 2, "features": 8, "dim1": 8, "dim2": 8},
    "1/24": {"batch_size": 4, "dim": 256},
    "1/25": {"batch_size": 2, "dim1": 16, "dim2": 16},
    "1/26": {"batch_size": 2, "dim1": 16, "dim2": 16},
    "1/27": {"batch_size": 2, "dim1": 16, "dim2": 16},
    "1/28": {"batch_size": 2, "channels": 4, "height": 16, "width": 16},
    "1/29": {"batch_size": 2, "channels": 4, "height": 16, "width": 16},
    "1/30": {"batch_size": 4, "dim": 256},
    "1/31": {"batch_size": 8, "num_classes": 32},
    "1/32": {"batch_size": 4, "dim": 256},
    "1/33": {"batch_size": 4, "dim": 256},
    "1/34": {"batch_size": 8, "dim": 64},
    "2/54": {"batch_size": 2, "in_channels": 8, "out_channels": 8, "height": 16, "width": 16},
    "2/63": {"batch_size": 8, "in_features": 64, "out_features": 32},
    "2/71": {"batch_size": 2, "height": 16, "width": 16},
    "2/97": {"batch_size": 16, "in_features": 64, "out_features": 32},
    "2/101": {"batch_size": 16, "in_features": 64, "out_features": 128},
    "2/102": {"batch_size": 2, "in_channels": 4, "out_channels": 8, "height": 16, "width": 16},
    "2/103": {"batch_size": 16, "in_features": 64, "out_features": 128},
    "2/104": {"batch_size": 2, "in_channels": 3, "out_channels": 8, "depth": 6, "height": 10, "width": 10},
    "2/105": {"batch_size": 2, "in_channels": 8, "out_channels": 4, "height": 8, "width": 8},
    "2/106": {"batch_size": 16, "in_features": 64, "out_features": 128},
    "2/107": {"batch_size": 2, "in_channels": 4, "out_channels": 8, "height": 16, "width": 16},
    "2/108": {"batch_size": 16, "in_features": 64, "out_features": 128},
    "2/109": {"batch_size": 2, "in_channels": 4, "out_channels": 8, "height": 16, "width": 16},
    "2/110": {"batch_size": 2, "in_channels": 4, "out_channels": 8, "height": 16, "width": 16},
    "2/111": {"batch_size": 16, "features": 128},
    "2/112": {"batch_size": 2, "in_channels": 4, "out_channels": 8, "depth": 6, "height": 10, "width": 10},
    "3/1": {"batch_size": 2, "input_size": 64, "layer_sizes": [64, 64, 32], "output_size": 16},
    "3/2": {"batch_size": 2, "in_channels": 8, "out_channels": 16, "height": 16, "width": 16},
    "3/3": {"batch_size": 2, "seq_len": 16, "d_model": 32, "n_heads": 4, "d_ff": 64},
    "3/4": {"batch_size": 4, "image_size": 16},
    "3/5": {"batch_size": 4, "seq_len": 8, "input_size": 16, "hidden_size": 32},
}
PROBLEMS = discover(ROOT / "problems")
CPU_CANDIDATES = [(p, s) for p in PROBLEMS for s in solutions_for(p, ROOT / "solutions") if s.name.startswith("cpp_")]


def test_every_problem_has_reduced_sizes():
    assert {p.key for p in PROBLEMS} == set(SMALL)


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.key)
def test_reference_runs_at_reduced_size(problem):
    assert len(problem.path.read_text().split('"""')[1].strip().splitlines()) == 1, "one-line docstring"
    module = load_problem(problem.path, SMALL[problem.key])
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs())
    inputs = module.get_inputs()
    with torch.no_grad():
        out = model(*inputs)
    assert isinstance(out, torch.Tensor) and out.numel() > 0
    assert torch.isfinite(out).all()
    assert out.numel() < 2**20, "reduced size should be small"


def test_at_least_three_cpu_candidates():
    assert len(CPU_CANDIDATES) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("problem, solution", CPU_CANDIDATES, ids=lambda x: getattr(x, "key", getattr(x, "name", "")))
def test_cpu_candidate_is_correct(evaluate, problem, solution):
    r = evaluate(solution, problem=problem.path, size_overrides=SMALL[problem.key])
    assert r.verdict is Verdict.CORRECT, f"{r.message}\n{r.log_tail}"
    assert r.max_abs <= 1e-4


@pytest.mark.parametrize("seed, verdict", [("seed_001.txt", Verdict.NEEDS_CUDA), ("seed_002.txt", Verdict.NEEDS_CUDA),
                                           ("seed_003.txt", Verdict.NO_CODE), ("seed_004.txt", Verdict.NO_CODE)])
def test_seed_completions_on_the_cpu(evaluate, seed, verdict):
    (problem,) = [p for p in PROBLEMS if any(s.name == seed for s in solutions_for(p, ROOT / "solutions"))]
    r = evaluate(ROOT / "solutions" / "level2" / problem.stem / seed, problem=problem.path, size_overrides=SMALL[problem.key])
    assert r.verdict is verdict
    if verdict is Verdict.NO_CODE:
        assert r.message == "response ends inside the reasoning; no final code block"
