import math

import torch

from kbharness.judge import check
from kbharness.judge.check import compare, error_vs


def test_identical_tensors_pass_with_zero_error():
    a = torch.randn(8, 8)
    c = compare(a, a.clone(), 1e-4, 1e-4)
    assert c.passed and c.max_abs == 0.0 and c.max_rel == 0.0


def test_errors_are_hand_computable():
    ref = torch.tensor([1.0, 2.0, -4.0, 0.0])
    new = torch.tensor([1.0, 2.5, -4.0, 1e-5])
    c = compare(ref, new, 1e-4, 1e-4)
    assert not c.passed
    assert math.isclose(c.max_abs, 0.5)
    assert math.isclose(c.max_rel, 0.25)  # 0.5 / 2.0; the element near 0 is below atol and excluded
    assert "1 of 4 elements outside" in c.reason


def test_tolerance_is_atol_plus_rtol_times_reference():
    ref = torch.tensor([100.0])
    assert compare(ref, torch.tensor([100.009]), 1e-4, 1e-4).passed  # bound 0.0101
    assert not compare(ref, torch.tensor([100.02]), 1e-4, 1e-4).passed


def test_nan_or_inf_where_reference_is_finite_fails():
    ref = torch.ones(3)
    for bad in (float("nan"), float("inf")):
        new = ref.clone()
        new[1] = bad
        c = compare(ref, new, 1.0, 1.0)
        assert not c.passed and "NaN/Inf" in c.reason and c.max_abs == math.inf


def test_nan_in_both_at_same_place_passes():
    ref = torch.tensor([1.0, float("nan")])
    assert compare(ref, ref.clone(), 1e-4, 1e-4).passed
    assert not compare(ref, torch.tensor([1.0, 2.0]), 1e-4, 1e-4).passed


def test_shape_dtype_and_type_mismatches_fail_with_reason():
    ref = torch.zeros(2, 3)
    assert "shape (3, 2)" in compare(ref, torch.zeros(3, 2), 1, 1).reason
    assert "dtype torch.float64" in compare(ref, torch.zeros(2, 3, dtype=torch.float64), 1, 1).reason
    assert "tensor subclass" in compare(ref, torch.nn.Parameter(torch.zeros(2, 3)), 1, 1).reason
    assert "not a plain torch.Tensor" in compare(ref, [0.0], 1, 1).reason


def test_sequences_compare_item_by_item():
    a, b = torch.ones(2), torch.zeros(2)
    assert compare((a, b), [a.clone(), b.clone()], 1e-4, 1e-4).passed
    c = compare((a, b), (a, b + 1), 1e-4, 1e-4)
    assert not c.passed and c.reason.startswith("item 1:") and c.max_abs == 1.0
    assert "sequence of 2" in compare((a, b), a, 1e-4, 1e-4).reason


def test_integer_outputs_must_be_equal():
    ref = torch.tensor([1, 2, 3])
    assert compare(ref, ref.clone(), 0, 0).passed
    assert not compare(ref, torch.tensor([1, 2, 4]), 10, 10).passed


def test_comparison_ignores_later_monkeypatching_of_torch():
    ref = torch.ones(4)
    wrong = torch.zeros(4)
    saved = torch.sub, torch.abs, torch.Tensor.__sub__
    try:
        torch.sub = lambda a, b, **k: torch.zeros_like(a)
        torch.abs = lambda a: torch.zeros_like(a)
        torch.Tensor.__sub__ = lambda a, b: torch.zeros_like(a)
        assert not compare(ref, wrong, 1e-4, 1e-4).passed
    finally:
        torch.sub, torch.abs, torch.Tensor.__sub__ = saved


def test_slices_add_up_to_the_whole_tensor(monkeypatch):
    monkeypatch.setattr(check, "CHUNK", 7)
    ref = torch.linspace(1.0, 2.0, 50)
    new = ref.clone()
    new[[3, 20, 49]] += torch.tensor([0.1, 0.3, 0.2])
    c = compare(ref, new, 1e-4, 1e-4)
    assert not c.passed and "3 of 50 elements outside" in c.reason
    assert math.isclose(c.max_abs, 0.3, rel_tol=1e-5)
    assert math.isclose(c.max_rel, 0.3 / float(ref[20]), rel_tol=1e-5)


def test_nan_in_a_late_slice_is_still_found(monkeypatch):
    monkeypatch.setattr(check, "CHUNK", 4)
    ref = torch.ones(20)
    new = ref.clone()
    new[17] = float("nan")
    c = compare(ref, new, 1.0, 1.0)
    assert not c.passed and "1 NaN/Inf" in c.reason and c.max_abs == math.inf


def test_matching_infinities_pass_and_opposite_ones_fail():
    ref = torch.tensor([1.0, float("inf"), float("-inf")])
    assert compare(ref, ref.clone(), 1e-4, 1e-4).passed
    flipped = torch.tensor([1.0, float("-inf"), float("-inf")])
    assert "non-finite values differ" in compare(ref, flipped, 1e-4, 1e-4).reason


def test_half_precision_and_complex_outputs_compare_in_their_own_terms():
    ref = torch.tensor([1.0, 2.0], dtype=torch.float16)
    assert not compare(ref, torch.tensor([1.0, 2.5], dtype=torch.float16), 1e-2, 1e-2).passed
    z = torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex64)
    assert compare(z, z.clone(), 1e-4, 1e-4).passed
    c = compare(z, torch.tensor([1 + 1j, 2 + 1j], dtype=torch.complex64), 1e-4, 1e-4)
    assert not c.passed and math.isclose(c.max_abs, 2.0)  # the imaginary part counts


def test_error_vs_float64_answer_over_slices_and_non_finite(monkeypatch):
    monkeypatch.setattr(check, "CHUNK", 3)
    exact = torch.tensor([1.0, -4.0, 2.0, 0.5, float("inf")], dtype=torch.float64)
    approx = torch.tensor([1.0, -4.5, 2.0, 0.5, float("inf")])
    max_abs, normalized = error_vs(exact, approx)
    assert math.isclose(max_abs, 0.5) and math.isclose(normalized, 0.5 / 4.0)
    assert error_vs(exact[:4], torch.tensor([1.0, float("nan"), 2.0, 0.5])) == (math.inf, math.inf)
