import torch

from kbharness.judge.checks.determinism import same_answer_twice
from kbharness.judge.checks.registry import RepeatCall


def test_two_different_answers_fail_unless_the_reference_is_stochastic():
    a, b = torch.zeros(4), torch.ones(4)
    assert same_answer_twice(RepeatCall(3, a, a.clone(), 1e-4, 1e-4, False)) == ""
    assert same_answer_twice(RepeatCall(3, a, b, 1e-4, 1e-4, False)).startswith("two runs on the same inputs (seed 3)")
    assert same_answer_twice(RepeatCall(3, a, b, 1e-4, 1e-4, True)) == ""
