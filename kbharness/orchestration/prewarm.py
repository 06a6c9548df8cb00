"""A lazy language's kernels compiled by a build worker, beside a GPU that is timing another
candidate. The candidate is called once on uninitialised inputs of its problem's shapes, with
the language's kernels compiled but never launched (``Language.compile_only``), so the
evaluation's first call finds them in the cache entry and only autotunes, on a quiet GPU.
Best effort: the evaluation's own first call, in its build phase, is the one that counts."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from kbharness.common.languages.base import Language
from kbharness.common.loading import load_problem

# What a build worker may hold on a GPU that is timing something else (inputs and parameters).
MAX_BYTES = 2 << 30


class NotWarmed(Exception):
    """Why a candidate's kernels were left to the evaluation's first call."""


def compile_kernels(model_new: type, problem_path: Path, device: str, dtype: torch.dtype, lang: Language) -> None:
    """Compile ``model_new``'s kernels for the problem's shapes on ``device``; raises
    ``NotWarmed``, or the language's own error (its compile error) from the call."""
    if lang.compile_only is None:
        raise NotWarmed(f"{lang.label} kernels cannot be compiled without running them")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise NotWarmed("no GPU to compile for")
    try:
        problem = load_problem(problem_path)
        with torch.device("meta"):
            init = problem.get_init_inputs()
            inputs = problem.get_inputs()
            model = model_new(*init)
    except Exception as e:  # the candidate or the problem does not construct on the meta device
        raise NotWarmed(f"its shapes could not be found on the meta device ({type(e).__name__}: {e})") from None
    held = _bytes(inputs) + _bytes(list(model.parameters()) + list(model.buffers()))
    if held > MAX_BYTES:
        raise NotWarmed(f"its inputs and parameters ({held / 2**30:.1f} GiB) would crowd a GPU that is timing")
    target = torch.device(device)
    try:
        model = model.to_empty(device=target)
        args = [_empty(x, target, dtype) for x in inputs]
    except Exception as e:
        raise NotWarmed(f"its model or inputs could not be placed on {device} ({type(e).__name__}: {e})") from None
    try:
        with lang.compile_only(), torch.no_grad():
            model(*args)
        if target.type == "cuda":
            torch.cuda.synchronize(target)
    except Exception as e:
        if lang.owns_error(e):
            raise
        raise NotWarmed(f"its call on uninitialised inputs failed ({type(e).__name__}: {e})") from None


def _bytes(values: list[Any]) -> int:
    return sum(x.numel() * x.element_size() for x in values if isinstance(x, torch.Tensor))


def _empty(x: Any, device: torch.device, dtype: torch.dtype) -> Any:
    """An uninitialised tensor of ``x``'s shape and strides: allocating it launches nothing."""
    if not isinstance(x, torch.Tensor):
        return x
    return torch.empty_strided(x.shape, x.stride(), dtype=dtype if x.is_floating_point() else x.dtype, device=device)
