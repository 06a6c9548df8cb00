"""A KernelBench-style prompt for an LLM: instructions, one worked example of a
``load_inline`` solution, and the problem's source. The completion it asks for is what
``kb compare`` reads: the last fenced python block after any reasoning."""
from __future__ import annotations

from pathlib import Path

from kbharness.common import languages

EXAMPLE_MODEL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.randn(4096), torch.randn(4096)]


def get_init_inputs():
    return []
'''

EXAMPLE_CUDA = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    int64_t n = a.numel();
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    add_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

ext = load_inline(name="example_add", cpp_sources="torch::Tensor add(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=cuda_source, functions=["add"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.add(a.contiguous(), b.contiguous())
'''

EXAMPLE_CPP = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* po = out.data_ptr<float>();
    at::parallel_for(0, a.numel(), 16384, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) po[i] = pa[i] + pb[i];
    });
    return out;
}
"""

ext = load_inline(name="example_add", cpp_sources=cpp_source, functions=["add"], extra_cflags=["-O3"])


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.add(a.contiguous(), b.contiguous())
'''

EXAMPLE_TRITON = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a + b, mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        out = torch.empty_like(a)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
        return out
'''

EXAMPLE_TILELANG = '''import torch
import torch.nn as nn
import tilelang
import tilelang.language as T


@tilelang.jit
def add_program(n, block=256):
    @T.prim_func
    def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), Out: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    Out[k] = A[k] + B[k]

    return add


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernels = {}

    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        n = a.numel()
        if n not in self.kernels:
            self.kernels[n] = add_program(n)
        out = torch.empty_like(a)
        self.kernels[n](a, b, out)
        return out
'''

EXAMPLE_CUTE = '''import torch
import torch.nn as nn

import cutlass
import cutlass.cute as cute
import cuda.bindings.driver as cuda
from cutlass.cute.runtime import from_dlpack

THREADS = 256  # threads per block; one output element per thread


@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < n:  # runtime bounds check: the last block may be partial
        gC[i] = gA[i] + gB[i]


@cute.jit
def add(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, n: cutlass.Int32, stream: cuda.CUstream):
    add_kernel(mA, mB, mC, n).launch(
        grid=[(n + THREADS - 1) // THREADS, 1, 1],
        block=[THREADS, 1, 1],
        stream=stream,
    )


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._compiled = {}  # (numel, dtype) -> compiled function

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        n = a.numel()
        if n == 0:
            return out
        # from_dlpack bakes the shape into the compiled code, so compile once per (numel, dtype)
        tA, tB, tC = from_dlpack(a.view(-1)), from_dlpack(b.view(-1)), from_dlpack(out.view(-1))
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        key = (n, a.dtype)
        if key not in self._compiled:
            self._compiled[key] = cute.compile(add, tA, tB, tC, n, stream)
        self._compiled[key](tA, tB, tC, n, stream)
        return out
'''

# Per language: the example solution and how its kernels are built.
EXAMPLES = {
    "cuda": (EXAMPLE_CUDA, "an inline CUDA kernel, built by torch.utils.cpp_extension.load_inline"),
    "cpp": (EXAMPLE_CPP, "an inline C++ (CPU) kernel, built by torch.utils.cpp_extension.load_inline"),
    "triton": (EXAMPLE_TRITON, "a Triton kernel (@triton.jit), compiled at its first call"),
    "cute": (EXAMPLE_CUTE, "a CuTe DSL kernel (a @cute.kernel launched from a @cute.jit function, compiled "
             "once per shape by cute.compile)"),
    "tilelang": (EXAMPLE_TILELANG, "a TileLang kernel (a @T.prim_func built by a @tilelang.jit function, "
                 "compiled once per shape)"),
}
LANGUAGES = tuple(EXAMPLES)

INSTRUCTIONS = """You write custom {kind} kernels that replace PyTorch operators to make a model faster.
You may replace any operators of the architecture below: fuse several into one kernel, change the
algorithm (online softmax, say), or keep some in PyTorch. The new model must compute the same result
(checked elementwise on fresh random inputs, atol = rtol = 1e-4 in fp32) and must not modify its
inputs, reuse results across calls, or launch work on other streams.

Here is an example. The architecture:

```python
{example_model}```

and a solution with {how}:

```python
{example_solution}```
"""

TASK = """Optimize this architecture, named Model, with custom {kind} operators:

```python
{source}```

Name the optimized architecture ModelNew; it takes the same constructor arguments as Model and
creates its parameters in the same order. Reply with the complete code of ModelNew, its imports
and its kernels, in one python code block, and nothing after that block. Do not include testing
code, get_inputs or get_init_inputs.
"""


def make_prompt(problem_path: Path, device: str = "cuda", language: str = "") -> str:
    """The prompt for ``language`` (one of LANGUAGES), by default CUDA on the GPU and C++ on the CPU."""
    name = language or ("cuda" if device == "cuda" else "cpp")
    example, how = EXAMPLES[name]
    kind = languages.by_name(name).label
    source = Path(problem_path).read_text()
    return (INSTRUCTIONS.format(kind=kind, how=how, example_model=EXAMPLE_MODEL, example_solution=example) + "\n"
            + TASK.format(kind=kind, source=source if source.endswith("\n") else source + "\n"))
