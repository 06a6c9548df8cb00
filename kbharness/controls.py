"""Null candidates: outputs that know nothing about the problem.

If returning all zeros, the reference's mean or the input unchanged passes the check,
the problem cannot tell right from wrong (outputs near zero, or constant across seeds),
and no verdict on it means anything. Run on the reference's outputs before any candidate.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from kbharness.check import compare


def _controls(inputs: Sequence[Any], ref_out: torch.Tensor) -> dict[str, torch.Tensor]:
    out = {"an all-zeros output": torch.zeros_like(ref_out)}
    if ref_out.is_floating_point() and ref_out.numel() > 1:
        out["the reference's mean everywhere"] = torch.full_like(ref_out, ref_out.float().mean().item())
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.shape == ref_out.shape and x.dtype == ref_out.dtype:
            out["the input passed through"] = x
            break
    return out


def passing_on(inputs: Sequence[Any], ref_out: Any, atol: float, rtol: float) -> set[str]:
    """Names of the null candidates that pass on one trial; intersect over trials, one at a
    time, so no trial's tensors need to be kept for it."""
    if not isinstance(ref_out, torch.Tensor):
        return set()
    return {name for name, fake in _controls(inputs, ref_out).items() if compare(ref_out, fake, atol, rtol).passed}


def passing_controls(trials: Sequence[tuple[Sequence[Any], Any]], atol: float, rtol: float) -> list[str]:
    """Names of the null candidates that pass on every (inputs, reference output) trial."""
    passing = None
    for inputs, ref_out in trials:
        names = passing_on(inputs, ref_out, atol, rtol)
        passing = names if passing is None else passing & names
    return sorted(passing or ())
