"""Which GPU kernels a call launched, and whether any of them is the candidate's own.

A candidate that only calls ATen, cuBLAS or cuDNN (or has torch.compile generate its
kernels) has replaced nothing, however fast it is.
"""
from __future__ import annotations

import re
from typing import Any, Callable

import torch

from kbharness.common import languages

_LIBRARY = re.compile(
    r"(^|[\s:<(])(at::|at_cuda_detail|c10::|cutlass|cublas|cudnn|cask|xmma|sm\d+_|ampere_|hopper_|volta_|turing_|"
    r"implicit_convolve|precomputed_convolve|winograd|fft|nchwToNhwc|nhwcToNchw|gemv|gemmSN|gemmk1|splitKreduce|"
    r"triton_(poi|per|red|tem)_|Memcpy|Memset|elementwise_kernel|reduce_kernel|vectorized_elementwise)",
)


def is_library_kernel(name: str) -> bool:
    return bool(_LIBRARY.search(name))


def launched_kernels(fn: Callable[[], Any]) -> list[tuple[str, float]]:
    """(kernel name, device µs) for each kernel ``fn`` launched, longest first."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    totals: dict[str, float] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            totals[event.name] = totals.get(event.name, 0.0) + event.device_time_total
    return sorted(totals.items(), key=lambda kv: -kv[1])


def kernel_identifier(name: str) -> str:
    """``void (anonymous namespace)::fused_kernel<4>(float const*)`` -> ``fused_kernel``."""
    head = name.split("(anonymous namespace)::")[-1].split("(")[0]
    depth, plain = 0, []
    for ch in head:
        depth += ch == "<"
        if depth == 0:
            plain.append(ch)
        depth -= ch == ">"
    return "".join(plain).split("::")[-1].split()[-1] if "".join(plain).strip() else ""


def custom_kernels(kernels: list[tuple[str, float]], source: str = "") -> list[str]:
    """Kernels the candidate defines itself (a ``__global__`` function of that name in its
    source), and any other kernel no library pattern claims: a candidate's kernel may be
    named like a library's (``gemv_bias_relu``) and still be its own."""
    own = languages.own_launches(source)
    return [name for name, _ in kernels
            if any(p.fullmatch(kernel_identifier(name)) for p in own) or not is_library_kernel(name)]
