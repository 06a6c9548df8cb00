"""How a model is built and called, the same way on both sides of the boundary: the judge
builds and calls the reference, the runner the candidate, from the same seeds, so both
get the same weights and start every call from the same RNG state."""
from __future__ import annotations

import contextlib
import random
import sys
import traceback
from typing import Any

import torch

from kbharness.common import languages, memory
from kbharness.common.results import Verdict
from kbharness.common.spec import DTYPES, Settings

# A call's RNG state is seeded from its input seed plus this, the same for both models.
CALL_SEED_OFFSET = 2**20


def build_model(cls: type, init_inputs: list, settings: Settings, device: torch.device,
                dtype: torch.dtype | None = None, on_device: bool = True) -> torch.nn.Module:
    """Same seed before every construction, so reference and candidate get the same weights.

    Constructed on the device (``on_device``): a billion parameters draw their initial values
    in milliseconds there, against 5 to 16 seconds on the host's generator, and a level-3 MLP
    is built three times an evaluation. Both models' weights come from one generator either way."""
    torch.manual_seed(settings.seed)
    if device.type == "cuda":
        torch.cuda.manual_seed_all(settings.seed)
    with device if on_device else contextlib.nullcontext():
        model = cls(*init_inputs)
    return model.to(device=device, dtype=dtype or DTYPES[settings.precision])


def seed_rng(seed: int, device: torch.device) -> None:
    """Every generator a problem or candidate may draw from, set to the same state."""
    torch.manual_seed(seed)
    if device.type == "cuda":
        torch.cuda.manual_seed_all(seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)


def clone(inputs: list) -> list:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def detach(out: Any) -> Any:
    if isinstance(out, torch.Tensor):
        return out.detach()
    if isinstance(out, (tuple, list)):
        return type(out)(detach(o) for o in out)
    return out


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def gradients(model: torch.nn.Module, inputs: list, seed: int) -> list:
    """Gradients of inputs and parameters for a fixed random upstream gradient."""
    xs = [x.detach().clone().requires_grad_(x.is_floating_point()) if isinstance(x, torch.Tensor) else x for x in inputs]
    model.zero_grad(set_to_none=True)
    out = model(*xs)
    outs = out if isinstance(out, (tuple, list)) else [out]
    gen = torch.Generator(device=outs[0].device).manual_seed(seed)
    upstream = [torch.randn(o.shape, generator=gen, device=o.device, dtype=o.dtype) for o in outs]
    torch.autograd.backward(outs, upstream)
    grads = [x.grad if isinstance(x, torch.Tensor) and x.grad is not None else torch.zeros(0) for x in xs
             if isinstance(x, torch.Tensor) and x.is_floating_point()]
    grads += [p.grad if p.grad is not None else torch.zeros_like(p) for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return [g.detach() for g in grads]


def classify_exception(e: BaseException) -> tuple[Verdict, str, str]:
    text = f"{type(e).__name__}: {e}"
    first = text.strip().splitlines()[0][:300]
    log = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    if memory.is_oom(e):
        return Verdict.OOM, first, log
    dsl = languages.compile_error(e)
    if dsl is not None:
        return Verdict.COMPILE_ERROR, dsl, log
    if "CUDA error" in text or "illegal memory access" in text or "device-side assert" in text:
        return Verdict.CUDA_ERROR, first, log
    return Verdict.RUNTIME_ERROR, first, log


class Staged:
    """A timed call's input buffers and the values they must hold (``timing.Stage``): poison is
    NaN for floating tensors and flipped bits for the rest, so anything read early is wrong."""

    def __init__(self, buffers: list, values: list):
        self.pairs = [(b, v) for b, v in zip(buffers, values) if isinstance(b, torch.Tensor)]

    def poison(self) -> None:
        for b, _ in self.pairs:
            if b.is_floating_point() or b.is_complex():
                b.fill_(float("nan"))
            else:
                b.bitwise_not_()

    def load(self) -> None:
        for b, v in self.pairs:
            b.copy_(v)


class Graphed:
    """A model captured once into a CUDA graph on static inputs: each timed call has a fresh
    input set staged into them (untimed) and replays, so launch overhead drops out for both
    models alike and no Python of the candidate runs during timing."""

    def __init__(self, model, example: list):
        self.static_in = clone(example)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                model(*self.static_in)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = model(*self.static_in)

    def __call__(self) -> Any:
        self.graph.replay()
        return self.static_out
