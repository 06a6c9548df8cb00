"""Speed of light: the least time a problem can take on a device, and how close a model gets.

Work is counted once per problem on the meta device (no memory, no compute): matmul and
convolution flops by torch's ``FlopCounterMode``, every other op by the per-element costs
in ``ELEMENT_FLOPS``; the least bytes are each input and parameter read once and each
output written once. The ceilings (copy bandwidth; matmul rate per dtype, with and
without TF32) are measured once per device with the harness's own timer and cached by
device name; a JSON file of datasheet figures can replace them.

The floor is the larger of tensor flops / tensor peak + other flops / fp32 peak, and
bytes / bandwidth; which term is larger says whether the problem is compute- or
memory-bound. A model's fraction of speed of light is floor / measured median.
"""
from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from kbharness.common.spec import DTYPES

# Flops per output element (per input element for reductions) of ops FlopCounterMode does not count.
ELEMENT_FLOPS = {
    "gelu": 8, "sigmoid": 4, "silu": 5, "tanh": 4, "softplus": 4, "elu": 3, "erf": 4, "exp": 1, "log": 1,
    "leaky_relu": 2, "hardtanh": 2, "clamp": 2, "_softmax": 5, "_log_softmax": 5, "logsumexp": 3,
    "native_layer_norm": 7, "native_batch_norm": 7, "_native_batch_norm_legit": 7,
    "_native_batch_norm_legit_functional": 7, "native_group_norm": 7, "_fused_rms_norm": 4,
    "mse_loss": 3, "smooth_l1_loss": 4, "huber_loss": 4, "l1_loss": 2, "binary_cross_entropy": 6, "kl_div": 3,
}
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "logsumexp", "var", "std", "prod",
              "cumsum", "norm", "linalg_vector_norm", "mse_loss", "smooth_l1_loss", "huber_loss", "l1_loss",
              "binary_cross_entropy", "kl_div"}
FREE = {"view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "empty", "empty_like",
        "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "detach", "alias",
        "unsqueeze", "squeeze", "slice", "select", "as_strided", "clone", "copy_", "_to_copy", "contiguous",
        "split", "split_with_sizes", "unbind", "cat", "stack", "lift_fresh", "new_empty", "new_zeros", "scalar_tensor",
        "_reshape_alias", "rand", "randn", "randint", "bernoulli_", "native_dropout", "dropout", "fill_", "zero_",
        "flatten", "unflatten", "chunk", "narrow", "index_select", "gather"}
DATASHEET_KEYS = ("bandwidth_gbs", "fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops")


@dataclass(frozen=True)
class Work:
    """What a problem's reference must do at least: flops (tensor-core-able and other) and bytes."""

    tensor_flops: float
    other_flops: float
    bytes: float
    bytes_by_dtype: dict[str, float] = field(default_factory=dict)
    # What every correct candidate must write, whatever algebra it uses: the output, once.
    output_bytes: float = 0.0

    @property
    def flops(self) -> float:
        return self.tensor_flops + self.other_flops

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else math.inf


@dataclass(frozen=True)
class Ceilings:
    """A device's measured (or datasheet) peaks: GB/s of copy bandwidth, TFLOP/s per dtype."""

    device_name: str
    bandwidth_gbs: float
    fp32_tflops: float
    tf32_tflops: float
    fp16_tflops: float
    bf16_tflops: float
    source: str = "measured"

    def tensor_peak(self, dtype: str) -> float:
        """Peak for matmul/conv flops in that precision; fp32 may use TF32 (cuDNN does by default)."""
        return {"fp32": max(self.fp32_tflops, self.tf32_tflops), "fp16": self.fp16_tflops,
                "bf16": self.bf16_tflops}[dtype]


@dataclass(frozen=True)
class Floor:
    """``floor_ms`` is the reference's operators at the ceilings; ``write_ms`` only writing the
    output once, the one bound an algebraic rewrite (diag(a)·B as a row scaling) cannot beat."""

    floor_ms: float
    compute_ms: float
    memory_ms: float
    write_ms: float = 0.0

    @property
    def bound(self) -> str:
        return "compute" if self.compute_ms >= self.memory_ms else "memory"


# Seconds the meta-device count may take. A recurrent model's single cuDNN call decomposes
# there into about 90,000 Python-dispatched operators (a bidirectional LSTM of 512 steps took
# 25 s of a 28 s evaluation); its figures are not worth that.
COUNT_BUDGET_S = 2.0


class WorkUncounted(Exception):
    """The reference's operators took longer than the budget to count."""


class _OpCounter(TorchDispatchMode):
    """Counts flops of the ops FlopCounterMode leaves out, by ``ELEMENT_FLOPS`` (default 1 per element)."""

    def __init__(self, counted_by_torch: set, budget_s: float):
        super().__init__()
        self.counted_by_torch = counted_by_torch
        self.flops = 0.0
        self.ops = 0
        self.budget_s = budget_s
        self.deadline = time.monotonic() + budget_s

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        if time.monotonic() > self.deadline:
            raise WorkUncounted(f"work not counted: the reference's operators took over {self.budget_s:g} s to count "
                                f"on the meta device ({self.ops} so far)")
        out = func(*args, **(kwargs or {}))
        packet = func._overloadpacket
        name = packet.__name__.rstrip("_") if packet.__name__ not in ELEMENT_FLOPS else packet.__name__
        if packet in self.counted_by_torch or name in FREE or packet.__name__ in FREE:
            return out
        if name in REDUCTIONS:
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            self.flops += ELEMENT_FLOPS.get(name, 1) * (first.numel() if first is not None else 0)
            return out
        outs = out if isinstance(out, (tuple, list)) else [out]
        main = next((o for o in outs if isinstance(o, torch.Tensor)), None)
        if main is not None:
            self.flops += ELEMENT_FLOPS.get(name, 1) * main.numel()
        return out


def _dtype_key(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def count_work(problem: Any, precision: str = "fp32", budget_s: float = COUNT_BUDGET_S) -> Work:
    """Count a loaded problem module's work on the meta device, at its current sizes; raises
    WorkUncounted past ``budget_s`` seconds."""
    dtype = DTYPES[precision]
    with torch.device("meta"):
        torch.manual_seed(0)
        model = problem.Model(*problem.get_init_inputs()).to(dtype=dtype)
        inputs = [x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                  for x in problem.get_inputs()]
    by_dtype: dict[str, float] = {}

    def add(t: torch.Tensor) -> None:
        by_dtype[_dtype_key(t.dtype)] = by_dtype.get(_dtype_key(t.dtype), 0.0) + t.numel() * t.element_size()

    for t in [x for x in inputs if isinstance(x, torch.Tensor)] + list(model.parameters()) + list(model.buffers()):
        add(t)
    flop_counter = FlopCounterMode(display=False)
    counter = _OpCounter(set(flop_counter.flop_registry), budget_s)
    with torch.no_grad(), flop_counter, counter:
        out = model(*inputs)
    outputs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor)]
    for o in outputs:
        add(o)
    return Work(float(flop_counter.get_total_flops()), counter.flops, sum(by_dtype.values()), by_dtype,
                float(sum(o.numel() * o.element_size() for o in outputs)))


def floor(work: Work, ceilings: Ceilings, precision: str = "fp32") -> Floor:
    compute_s = work.tensor_flops / (ceilings.tensor_peak(precision) * 1e12) + work.other_flops / (ceilings.fp32_tflops * 1e12)
    memory_s = work.bytes / (ceilings.bandwidth_gbs * 1e9)
    write_s = work.output_bytes / (ceilings.bandwidth_gbs * 1e9)
    return Floor(max(compute_s, memory_s) * 1e3, compute_s * 1e3, memory_s * 1e3, write_s * 1e3)


# The measured ceilings are what a copy and a GEMM reach, not the hardware's peak: the
# datasheets give 11-12% more bandwidth (H100 3.35 and H200 4.8 TB/s against 3.03 and 4.28
# copied here), read-only streams outrun a copy (an H200 MSE kernel read its inputs 0.2%
# faster than the copy floor), and matmul peaks run 18-23% above the GEMMs measured. A time
# is called physically impossible only this far below a bound.
IMPOSSIBLE_MARGIN = 1.25


def impossible(median_ms: float, fl: Floor) -> bool:
    """Faster than writing the output once: no correct candidate can be (the gate fails it)."""
    return median_ms * IMPOSSIBLE_MARGIN < fl.write_ms


def less_work(median_ms: float, fl: Floor) -> bool:
    """Faster than the reference's own operators allow: an algebraic rewrite doing less work
    (a GEMM and a reduction collapsed into a GEMV), worth a look but no fault."""
    return median_ms * IMPOSSIBLE_MARGIN < fl.floor_ms


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform

    return f"cpu:{platform.processor() or platform.machine()}:{os.cpu_count()} cores"


def measure_ceilings(device: torch.device) -> Ceilings:
    """Copy bandwidth and matmul peaks, timed with the harness's timer (medians)."""
    from kbharness.common.timing import timer_for

    timer = timer_for(device)
    cuda = device.type == "cuda"
    n_bytes = 2**30 if cuda else 2**28
    src = torch.empty(n_bytes // 4, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)

    def median_ms(fn, runs: int) -> float:
        fn()
        timer.sync()
        times = sorted(timer.time(fn).time.call_ms for _ in range(runs))
        return times[len(times) // 2]

    bandwidth = 2 * n_bytes / (median_ms(lambda: dst.copy_(src), 20) / 1e3) / 1e9
    del src, dst
    n = 8192 if cuda else 2048
    peaks = {}
    for key, dtype, tf32 in (("fp32", torch.float32, False), ("tf32", torch.float32, True),
                             ("fp16", torch.float16, False), ("bf16", torch.bfloat16, False)):
        if not cuda and key != "fp32":
            peaks[key] = peaks["fp32"]
            continue
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            peaks[key] = 2 * n**3 / (median_ms(lambda: a @ b, 10) / 1e3) / 1e12
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
    return Ceilings(device_name(device), bandwidth, peaks["fp32"], peaks["tf32"], peaks["fp16"], peaks["bf16"])


def load_ceilings(device: torch.device, cache_dir: Path, override: Path | None = None) -> Ceilings:
    """Datasheet figures from ``override``, else this device's cached measurement, else measure and cache."""
    name = device_name(device)
    if override is not None:
        d = json.loads(Path(override).read_text())
        missing = [k for k in DATASHEET_KEYS if k not in d]
        if missing:
            raise ValueError(f"{override}: ceilings file lacks {', '.join(missing)}")
        return Ceilings(name, *(float(d[k]) for k in DATASHEET_KEYS), source=str(override))
    cache = Path(cache_dir) / "ceilings.json"
    known = json.loads(cache.read_text()) if cache.exists() else {}
    if name in known:
        return Ceilings(**known[name])
    measured = measure_ceilings(device)
    known[name] = asdict(measured)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(known, indent=1))
    os.replace(tmp, cache)
    return measured
