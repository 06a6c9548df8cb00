import math

import torch

from kbharness.check import compare


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
