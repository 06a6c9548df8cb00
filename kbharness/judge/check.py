"""Comparing a candidate's output with the reference's, element by element.

Every torch function used here is bound when this module is imported, which the worker
does before any candidate code runs: a candidate that later monkeypatches ``torch.allclose``
or ``Tensor.__sub__`` changes nothing the comparison calls.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

_Tensor = torch.Tensor
_abs = torch.abs
_sub = torch.sub
_isfinite = torch.isfinite
_isnan = torch.isnan
_logical_and = torch.logical_and
_logical_not = torch.logical_not
_any = torch.any
_amax = torch.amax
_where = torch.where
_le = torch.le
_all = torch.all
_to = torch.Tensor.to
_item = torch.Tensor.item
_numel = torch.Tensor.numel
_zeros_like = torch.zeros_like
_div = torch.div
_gt = torch.gt
_equal = torch.equal
_logical_or = torch.logical_or
_ones_like = torch.ones_like
_eq = torch.eq
_sum = torch.sum
_add = torch.add
_mul = torch.mul
_stack = torch.stack
_tolist = torch.Tensor.tolist


@dataclass(frozen=True)
class Comparison:
    """Outcome of comparing one output structure; errors are the worst over all elements."""

    passed: bool
    max_abs: float
    max_rel: float
    reason: str = ""


def compare(ref: Any, new: Any, atol: float, rtol: float) -> Comparison:
    """Pass when every element satisfies ``|new - ref| <= atol + rtol * |ref|``.

    NaN passes only where the reference has NaN at the same place, Inf only where it has
    the same Inf. ``max_rel`` is taken over elements with ``|ref| > atol`` so that values
    near zero do not make it meaningless.
    """
    if isinstance(ref, (tuple, list)):
        if not isinstance(new, (tuple, list)) or len(new) != len(ref):
            return Comparison(False, float("inf"), float("inf"), f"output is {_describe(new)}, reference is a sequence of {len(ref)}")
        parts = [compare(r, n, atol, rtol) for r, n in zip(ref, new)]
        failed = [f"item {i}: {p.reason}" for i, p in enumerate(parts) if not p.passed]
        return Comparison(
            not failed,
            max((p.max_abs for p in parts), default=0.0),
            max((p.max_rel for p in parts), default=0.0),
            "; ".join(failed),
        )
    if isinstance(ref, _Tensor):
        return _compare_tensors(ref, new, atol, rtol)
    if isinstance(ref, (int, float, bool)):
        ok = isinstance(new, (int, float, bool)) and abs(float(new) - float(ref)) <= atol + rtol * abs(float(ref))
        err = abs(float(new) - float(ref)) if isinstance(new, (int, float, bool)) else float("inf")
        return Comparison(ok, err, err / abs(float(ref)) if ref else 0.0, "" if ok else f"scalar {new!r} != {ref!r}")
    return Comparison(False, float("inf"), float("inf"), f"reference returned an unsupported {type(ref).__name__}")


# Elements compared at a time: the comparison's temporaries stay near this many floats
# however large the output (a level-1 output can be 6 GiB).
CHUNK = 2**24


def _flat_chunks(ref: torch.Tensor, new: torch.Tensor, work: torch.dtype):
    """Matching flat slices of both tensors in ``work`` precision, on the GPU if either is
    there: an output parked on the host travels one slice at a time, and is converted once it
    has arrived (converted on the host, a 12 GiB output's float64 error took 7 s, not 1)."""
    device = new.device if new.device.type != "cpu" else ref.device
    r_all, n_all = ref.reshape(-1), new.reshape(-1)
    for start in range(0, _numel(r_all), CHUNK):
        r = _to(_to(r_all[start:start + CHUNK], device=device), dtype=work)
        yield r, _to(_to(n_all[start:start + CHUNK], device=device), dtype=work)


def _compare_tensors(ref: torch.Tensor, new: Any, atol: float, rtol: float) -> Comparison:
    inf = float("inf")
    if type(new) is not _Tensor:
        return Comparison(False, inf, inf, f"output is {_describe(new)}, not a plain torch.Tensor")
    if new.shape != ref.shape:
        return Comparison(False, inf, inf, f"shape {tuple(new.shape)} != reference {tuple(ref.shape)}")
    if new.dtype != ref.dtype:
        return Comparison(False, inf, inf, f"dtype {new.dtype} != reference {ref.dtype}")
    if _numel(ref) == 0:
        return Comparison(True, 0.0, 0.0)
    if ref.dtype == torch.bool or not (ref.is_floating_point() or ref.is_complex()):
        same = all(_equal(r, n) for r, n in _flat_chunks(ref, new, ref.dtype))
        return Comparison(same, 0.0 if same else inf, 0.0 if same else inf, "" if same else "integer output differs")
    work = _work_dtype(ref)
    # A dozen kernels a slice and one synchronization in all: a 6 GiB output is compared about
    # 50 times in an evaluation. Any NaN or Inf in either makes a difference non-finite, and
    # then the detailed accounting says where.
    per_chunk = []
    for r, n in _flat_chunks(ref, new, work):
        diff = _abs(_sub(n, r))
        abs_r = _abs(r)
        big = _gt(abs_r, atol)
        per_chunk.append(_stack([_to(_amax(diff), dtype=torch.float64),
                                 _to(_amax(_where(big, _div(diff, abs_r), 0.0)), dtype=torch.float64),
                                 _to(_sum(_gt(diff, _add(_mul(abs_r, rtol), atol))), dtype=torch.float64)]))
    stats = _tolist(_stack(per_chunk))
    if not all(math.isfinite(s[0]) for s in stats):  # Python's max would skip a NaN
        return _compare_detailed(ref, new, atol, rtol)
    max_abs = max(s[0] for s in stats)
    max_rel = max(s[1] for s in stats)
    outside = int(sum(s[2] for s in stats))
    if outside:
        return Comparison(False, max_abs, max_rel, f"{outside} of {_numel(ref)} elements outside atol={atol:g} "
                          f"rtol={rtol:g} (max abs {max_abs:.3g})")
    return Comparison(True, max_abs, max_rel)


def _work_dtype(ref: torch.Tensor) -> torch.dtype:
    """fp32 differences of nearby values are exact (Sterbenz), so float64 is needed only for
    float64 outputs; complex outputs keep their own type."""
    if ref.is_complex() or ref.dtype == torch.float64:
        return ref.dtype
    return torch.float32


def _compare_detailed(ref: torch.Tensor, new: torch.Tensor, atol: float, rtol: float) -> Comparison:
    """Element-by-element accounting of NaN and Inf, for outputs that hold any."""
    inf = float("inf")
    work = _work_dtype(ref)
    max_abs = max_rel = 0.0
    bad_nonfinite = outside = 0
    nonfinite_differ = False
    for r, n in _flat_chunks(ref, new, work):
        r_fin = _isfinite(r)
        n_fin = _isfinite(n)
        bad_nonfinite += _item(_sum(_logical_and(r_fin, _logical_not(n_fin))))
        nan_mismatch = _logical_and(_isnan(r), _logical_not(_isnan(n)))
        inf_mismatch = _logical_and(_logical_not(_logical_or(r_fin, _isnan(r))), _logical_not(_eq(n, r)))
        nonfinite_differ = nonfinite_differ or bool(_item(_any(nan_mismatch)) or _item(_any(inf_mismatch)))
        both = _logical_and(r_fin, n_fin)
        diff = _where(both, _abs(_sub(n, r)), _zeros_like(r))
        max_abs = max(max_abs, _item(_amax(diff)))
        abs_r = _abs(_where(r_fin, r, _zeros_like(r)))
        big = _gt(abs_r, atol)
        rel = _where(big, _div(diff, _where(big, abs_r, _ones_like(abs_r))), _zeros_like(r))
        max_rel = max(max_rel, _item(_amax(rel)))
        outside += _item(_sum(_gt(diff, _add(_mul(abs_r, rtol), atol))))
    reasons = []
    if bad_nonfinite:
        reasons.append(f"{bad_nonfinite} NaN/Inf where the reference is finite")
        max_abs = max_rel = inf
    if nonfinite_differ:
        reasons.append("non-finite values differ from the reference's")
    if outside:
        reasons.append(f"{outside} of {_numel(ref)} elements outside atol={atol:g} rtol={rtol:g} (max abs {max_abs:.3g})")
    return Comparison(not reasons, max_abs, max_rel, "; ".join(reasons))


def _describe(obj: Any) -> str:
    if isinstance(obj, _Tensor):
        return f"a {type(obj).__name__} (tensor subclass)"
    return f"a {type(obj).__name__}"


def error_vs(exact: Any, approx: Any) -> tuple[float, float]:
    """(max abs, normalized) error of ``approx`` against a more exact output, in float64.

    Normalized error is max |approx - exact| / max |exact|: scale-free, and not blown up by
    elements near zero the way an elementwise relative error is. An output of another
    structure or shape, or non-finite where ``exact`` is not, is infinitely far."""
    inf = float("inf")
    if isinstance(exact, (tuple, list)):
        if not isinstance(approx, (tuple, list)) or len(approx) != len(exact):
            return inf, inf
        parts = [error_vs(e, a) for e, a in zip(exact, approx)]
        return max((p[0] for p in parts), default=0.0), max((p[1] for p in parts), default=0.0)
    if not (isinstance(exact, _Tensor) and exact.is_floating_point()):
        return 0.0, 0.0
    if not isinstance(approx, _Tensor) or approx.shape != exact.shape:
        return inf, inf
    if _numel(exact) == 0:
        return 0.0, 0.0
    per_chunk = []
    for e, a in _flat_chunks(exact, approx, torch.float64):
        per_chunk.append(_stack([_amax(_abs(_sub(a, e))), _amax(_abs(e))]))
    stats = _tolist(_stack(per_chunk))
    if all(math.isfinite(v) for s in stats for v in s):
        max_abs, scale = max(s[0] for s in stats), max(s[1] for s in stats)
    else:
        max_abs, scale = _error_nonfinite(exact, approx)
        if max_abs == inf:
            return inf, inf
    return max_abs, (max_abs / scale if scale > 0 else max_abs)


def _error_nonfinite(exact: torch.Tensor, approx: torch.Tensor) -> tuple[float, float]:
    """(max abs error, scale) over the finite elements; infinite where ``approx`` is not
    finite where ``exact`` is."""
    scale = max_abs = 0.0
    for e, a in _flat_chunks(exact, approx, torch.float64):
        e_fin = _isfinite(e)
        if not _item(_all(_logical_or(_logical_not(e_fin), _isfinite(a)))):
            return float("inf"), scale
        finite = _logical_and(e_fin, _isfinite(a))
        max_abs = max(max_abs, _item(_amax(_where(finite, _abs(_sub(a, e)), _zeros_like(e)))))
        scale = max(scale, _item(_amax(_where(e_fin, _abs(e), _zeros_like(e)))))
    return max_abs, scale


# Normalized-error ceilings of each tier, finest first.
PRECISION_TIERS = (("bitwise", 0.0), ("fp32-level", 1e-5), ("tf32/fp16-level", 1e-3), ("1e-2", 1e-2))


def precision_tier(normalized_error: float) -> str:
    """Which tolerance tier an error meets, so a silent drop to half precision shows."""
    for name, ceiling in PRECISION_TIERS:
        if normalized_error <= ceiling:
            return name
    return "> 1e-2"
