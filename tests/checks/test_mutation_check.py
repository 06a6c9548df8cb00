import torch

from kbharness.judge.checks.mutation import inputs_unchanged
from kbharness.judge.checks.registry import TrialCall


def _call(expected, after):
    return TrialCall(7, expected, after, False, False, False)


def test_changed_inputs_fail_and_untouched_ones_pass():
    x = torch.arange(4.0)
    assert inputs_unchanged(_call([x, 3], [x.clone(), 3])) == ""
    changed = x.clone()
    changed[0] = 9
    assert inputs_unchanged(_call([x], [changed])).startswith("trial seed 7: inputs after the call differ")

