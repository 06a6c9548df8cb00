"""No output aliasing: an output that is an input, a parameter, or the previous call's memory
can look right once and be overwritten by whatever writes there next."""
from __future__ import annotations

from kbharness.judge.checks.registry import RepeatCall, TrialCall, register


@register("no output aliasing", "trial")
def own_memory(call: TrialCall) -> str:
    if call.out_aliases_input and not call.ref_aliases_input:
        return "output is a view of an input tensor"
    if call.out_aliases_param:
        return "output shares memory with a parameter or buffer"
    return ""


@register("no output aliasing", "repeat")
def fresh_memory_each_call(repeat: RepeatCall) -> str:
    if repeat.same_memory:
        return "two calls returned the same memory: the second overwrote the first's output"
    return ""
