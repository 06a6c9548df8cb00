"""No input mutation: a call that changes its inputs hands the next caller different data."""
from __future__ import annotations

import torch

from kbharness.check import compare
from kbharness.checks.registry import TrialCall, register


def _tensors(xs: list) -> list:
    return [x for x in xs if isinstance(x, torch.Tensor)]


@register("no input mutation", "trial")
def inputs_unchanged(call: TrialCall) -> str:
    result = compare(_tensors(call.expected_in), _tensors(call.new_in), 0.0, 0.0)
    if result.passed:
        return ""
    return f"trial seed {call.seed}: inputs after the call differ from the reference's ({result.reason})"
