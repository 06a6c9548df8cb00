"""Deterministic: two calls on the same inputs from the same RNG state that differ race or
read uninitialized memory. A stochastic reference cannot ask it of a candidate."""
from __future__ import annotations

from kbharness.judge.check import compare
from kbharness.judge.checks.registry import RepeatCall, register


@register("deterministic", "repeat")
def same_answer_twice(repeat: RepeatCall) -> str:
    if repeat.stochastic:
        return ""
    result = compare(repeat.first, repeat.second, repeat.atol, repeat.rtol)
    return "" if result.passed else f"two runs on the same inputs (seed {repeat.seed}) differ: {result.reason}"
