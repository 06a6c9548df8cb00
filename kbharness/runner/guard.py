"""Noticing a candidate that patched the harness's world.

The comparison and the timer hold their own references to torch's functions, but the worker
also builds models, clones inputs and draws random numbers through torch, and the harness's
own functions, classes and their methods (a timer's ``time``, the comparison) are Python
objects a candidate in the same process can replace. A snapshot of all of those is taken
before candidate code is imported; afterwards, anything replaced, and any torch function or
dispatch mode left active, is reported.
"""
from __future__ import annotations

import inspect
import sys
import time
from typing import Any

import torch

_WATCHED: dict[str, tuple[Any, tuple[str, ...]]] = {
    "torch": (torch, ("allclose", "isclose", "equal", "sub", "abs", "sum", "manual_seed", "rand", "randn",
                      "empty", "empty_like", "zeros_like", "clone", "no_grad", "isfinite", "synchronize")),
    "torch.Tensor": (torch.Tensor, ("clone", "to", "copy_", "__sub__", "__eq__", "sum", "item", "data_ptr",
                                    "untyped_storage", "detach", "zero_", "__torch_function__")),
    "torch.nn.Module": (torch.nn.Module, ("to", "__call__", "_call_impl", "parameters", "buffers")),
    "torch.cuda": (torch.cuda, ("synchronize", "Event", "manual_seed_all", "empty_cache", "mem_get_info")),
    "torch.cuda.Event": (torch.cuda.Event, ("record", "elapsed_time", "synchronize")),
    "time": (time, ("perf_counter_ns", "perf_counter", "monotonic")),
}


def _harness() -> dict[str, tuple[Any, tuple[str, ...]]]:
    """Every module-level name of the harness's imported modules, and every attribute of the
    classes they define (dunder names aside: the interpreter keeps its own there)."""
    watched: dict[str, tuple[Any, tuple[str, ...]]] = {}
    for name, module in list(sys.modules.items()):
        if name != "kbharness" and not name.startswith("kbharness."):
            continue
        watched[name] = (module, tuple(a for a in vars(module) if not a.startswith("__")))
        for attr, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == name:
                watched[f"{name}.{attr}"] = (value, tuple(a for a in vars(value) if not a.startswith("__")))
    return watched


class Snapshot:
    """Identity of every watched attribute, taken at construction."""

    def __init__(self) -> None:
        self._watched = {**_WATCHED, **_harness()}
        self._ids = {(owner, name): id(inspect.getattr_static(obj, name, None))
                     for owner, (obj, names) in self._watched.items() for name in names}

    def changes(self) -> list[str]:
        """What was replaced or left active since the snapshot; empty when nothing was."""
        changed = [f"{owner}.{name} was replaced"
                   for (owner, name), ident in self._ids.items()
                   if id(inspect.getattr_static(self._watched[owner][0], name, None)) != ident]
        if torch._C._len_torch_function_stack() > 0:
            changed.append("a TorchFunctionMode is active")
        if torch._C._len_torch_dispatch_stack() > 0:
            changed.append("a TorchDispatchMode is active")
        return changed
