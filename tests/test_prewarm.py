"""A lazy language's kernels compiled in a build worker: the candidate called once on
uninitialised inputs of its problem's shapes, inside the language's compile-only context.
On the CPU with a stand-in language (Triton's context is exercised on the GPU)."""
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from conftest import TINY_PROBLEM
from kbharness.orchestration import prewarm
from kbharness.common.languages.base import Language, imports


class KernelError(Exception):
    """What the stand-in language's compiler raises."""


SEEN = []


@contextmanager
def _compile_only():
    SEEN.append("enter")
    try:
        yield
    finally:
        SEEN.append("exit")


def _language(compile_only=_compile_only) -> Language:
    return Language(name="fake", label="Fake", markers=imports("fake"), needs_cuda=False, lazy=True,
                    error_modules=(KernelError.__module__,), compile_only=compile_only)


class Records(nn.Module):
    """Records each call's inputs and whether it ran inside the compile-only context."""

    calls = []

    def __init__(self, scale):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))
        self.scale = scale

    def forward(self, x):
        Records.calls.append((x.shape, x.stride(), x.dtype, x.device.type, SEEN[-1] if SEEN else ""))
        return x * self.scale


@pytest.fixture(autouse=True)
def _fresh():
    SEEN.clear()
    Records.calls.clear()


def test_the_candidate_is_called_once_inside_compile_only_with_the_problems_shapes():
    prewarm.compile_kernels(Records, TINY_PROBLEM, "cpu", torch.float16, _language())
    assert SEEN == ["enter", "exit"]
    [(shape, stride, dtype, device, context)] = Records.calls
    assert len(shape) == 2 and stride == (shape[1], 1)
    assert dtype is torch.float16 and device == "cpu" and context == "enter"


def test_inputs_and_parameters_beyond_the_cap_are_left_to_the_first_call(monkeypatch):
    monkeypatch.setattr(prewarm, "MAX_BYTES", 16)
    with pytest.raises(prewarm.NotWarmed, match="would crowd a GPU that is timing"):
        prewarm.compile_kernels(Records, TINY_PROBLEM, "cpu", torch.float32, _language())
    assert not Records.calls


def test_the_languages_own_error_comes_through_as_its_compile_error():
    class Broken(Records):
        def forward(self, x):
            raise KernelError("at 3:4: undefined name")

    with pytest.raises(KernelError, match="undefined name"):
        prewarm.compile_kernels(Broken, TINY_PROBLEM, "cpu", torch.float32, _language())


def test_any_other_failure_leaves_the_kernels_to_the_first_call_and_says_why():
    class NeedsValues(Records):
        def forward(self, x):
            raise RuntimeError("data-dependent shape")

    class NoMeta(Records):
        def __init__(self, scale):
            super().__init__(scale)
            raise ValueError("cannot build on meta")

    with pytest.raises(prewarm.NotWarmed, match="call on uninitialised inputs failed.*data-dependent shape"):
        prewarm.compile_kernels(NeedsValues, TINY_PROBLEM, "cpu", torch.float32, _language())
    with pytest.raises(prewarm.NotWarmed, match="meta device.*cannot build on meta"):
        prewarm.compile_kernels(NoMeta, TINY_PROBLEM, "cpu", torch.float32, _language())


def test_a_language_that_cannot_compile_without_running_is_not_warmed():
    with pytest.raises(prewarm.NotWarmed, match="cannot be compiled without running them"):
        prewarm.compile_kernels(Records, TINY_PROBLEM, "cpu", torch.float32, _language(compile_only=None))


def test_without_a_gpu_a_cuda_build_is_not_warmed(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(prewarm.NotWarmed, match="no GPU"):
        prewarm.compile_kernels(Records, TINY_PROBLEM, "cuda", torch.float32, _language())


def test_a_problem_that_cannot_be_read_is_not_warmed(tmp_path: Path):
    with pytest.raises(prewarm.NotWarmed, match="meta device"):
        prewarm.compile_kernels(Records, tmp_path / "missing.py", "cpu", torch.float32, _language())
