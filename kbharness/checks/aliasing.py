"""No output aliasing: an output that is an input, a parameter, or the previous call's memory
can look right once and be overwritten by whatever writes there next."""
from __future__ import annotations

from kbharness.checks.registry import RepeatCall, TrialCall, register
from kbharness.checks.views import flat, shares


@register("no output aliasing", "trial")
def own_memory(call: TrialCall) -> str:
    for o in flat(call.out):
        if not call.ref_aliases_input and any(shares(o, x) for x in call.new_in):
            return "output is a view of an input tensor"
        if any(shares(o, p) for p in call.params):
            return "output shares memory with a parameter or buffer"
    return ""


@register("no output aliasing", "repeat")
def fresh_memory_each_call(repeat: RepeatCall) -> str:
    if any(shares(a, b) for a in flat(repeat.first) for b in flat(repeat.second)):
        return "two calls returned the same memory: the second overwrote the first's output"
    return ""
