import torch

from kbharness.judge.checks.aliasing import fresh_memory_each_call, own_memory
from kbharness.judge.checks.registry import RepeatCall, TrialCall


def test_an_output_that_is_an_input_or_a_parameter_fails():
    x = [torch.ones(4)]
    assert own_memory(TrialCall(1, x, x, True, False, False)) == "output is a view of an input tensor"
    assert own_memory(TrialCall(1, x, x, False, True, False)) == "output shares memory with a parameter or buffer"
    assert own_memory(TrialCall(1, x, x, False, False, False)) == ""


def test_an_input_view_is_allowed_where_the_reference_returns_one_too():
    x = [torch.ones(4)]
    assert own_memory(TrialCall(1, x, x, True, False, True)) == ""


def test_two_calls_returning_the_same_memory_fail():
    out = torch.ones(4)
    assert "same memory" in fresh_memory_each_call(RepeatCall(1, out, out, 0, 0, False, same_memory=True))
    assert fresh_memory_each_call(RepeatCall(1, out, out.clone(), 0, 0, False)) == ""
