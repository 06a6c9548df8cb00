"""No input mutation: a call that changes its inputs hands the next caller different data."""
from __future__ import annotations

from kbharness.judge.check import compare
from kbharness.judge.checks.registry import TrialCall, register
from kbharness.common.views import tensors


@register("no input mutation", "trial")
def inputs_unchanged(call: TrialCall) -> str:
    result = compare(tensors(call.expected_in), tensors(call.new_in), 0.0, 0.0)
    if result.passed:
        return ""
    return f"trial seed {call.seed}: inputs after the call differ from the reference's ({result.reason})"
