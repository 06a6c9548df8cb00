"""Tensors in an input or output structure, and whether two share memory: the questions
behind mutation, aliasing and replayed outputs."""
from __future__ import annotations

from typing import Any

import torch


def tensors(xs: list) -> list:
    """The tensors of an input list: what a call can mutate and a redraw must reproduce."""
    return [x for x in xs if isinstance(x, torch.Tensor)]


def flat(out: Any) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def shares(a: Any, b: Any) -> bool:
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.device != b.device:
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    a0, b0 = sa.data_ptr(), sb.data_ptr()
    return a0 < b0 + sb.nbytes() and b0 < a0 + sa.nbytes() and sa.nbytes() > 0 and sb.nbytes() > 0
