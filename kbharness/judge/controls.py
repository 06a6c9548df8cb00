"""Null candidates: outputs that know nothing about the problem.

If returning all zeros, the reference's mean or the input unchanged passes the check,
the problem cannot tell right from wrong (outputs near zero, or constant across seeds),
and no verdict on it means anything. Run on the reference's outputs before any candidate.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from kbharness.judge.check import compare


ZEROS, MEAN, PASSTHROUGH = "an all-zeros output", "the reference's mean everywhere", "the input passed through"


def _controls(inputs: Sequence[Any], ref_out: torch.Tensor, among: set[str] | None = None) -> dict[str, torch.Tensor]:
    def wanted(name: str) -> bool:
        return among is None or name in among

    out = {ZEROS: torch.zeros_like(ref_out)} if wanted(ZEROS) else {}
    if wanted(MEAN) and ref_out.is_floating_point() and ref_out.numel() > 1:
        out[MEAN] = torch.full_like(ref_out, ref_out.float().mean().item())
    for x in inputs:
        if wanted(PASSTHROUGH) and isinstance(x, torch.Tensor) and x.shape == ref_out.shape and x.dtype == ref_out.dtype:
            out[PASSTHROUGH] = x
            break
    return out


def passing_on(inputs: Sequence[Any], ref_out: Any, atol: float, rtol: float,
               among: set[str] | None = None) -> set[str]:
    """Names of the null candidates that pass on one trial, of those ``among`` (all when None):
    intersect over trials, one at a time, so no trial's tensors need to be kept for it and a
    control that failed once is not compared again."""
    if not isinstance(ref_out, torch.Tensor) or among == set():
        return set()
    return {name for name, fake in _controls(inputs, ref_out, among).items()
            if compare(ref_out, fake, atol, rtol).passed}

