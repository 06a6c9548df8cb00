"""CUDA candidate: RMSNorm over dim 1 of a (B, C, H, W) tensor in one kernel.

One thread per (b, h*w) position, consecutive threads on consecutive positions, so every
channel load and store of a warp is one coalesced 128-byte line. For C <= 64 (the problem
has 64) a thread keeps its whole channel column in registers: x is read from memory once
and the output written once (the reference makes about seven full passes: x*x, mean, +eps
and sqrt, divide, multiply). Larger C loops over the column twice (sum of squares, then
the write). The arithmetic follows the reference: mean = sum(x*x) / C,
rms = sqrt(mean + eps), out = x / rms * weight[c]."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_decl = r"""
#include <torch/extension.h>
torch::Tensor rms_norm_channels(torch::Tensor x, torch::Tensor weight, double eps);
"""

_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <algorithm>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

// Column held in registers: MAXC is a compile-time bound, every index is a constant after
// unrolling, and channels c >= C are masked off.
template <int MAXC>
__global__ void rms_norm_regs_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                     float* __restrict__ out, int64_t positions, int64_t hw,
                                     int C, float eps) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t pos = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; pos < positions; pos += stride) {
        const int64_t b = pos / hw;
        const int64_t base = b * static_cast<int64_t>(C) * hw + (pos - b * hw);
        float v[MAXC];
#pragma unroll
        for (int c = 0; c < MAXC; ++c) {
            v[c] = c < C ? __ldcs(x + base + static_cast<int64_t>(c) * hw) : 0.0f;
        }
        float ss = 0.0f;
#pragma unroll
        for (int c = 0; c < MAXC; ++c) {
            ss = __fadd_rn(ss, __fmul_rn(v[c], v[c]));
        }
        const float rms = sqrtf(ss / static_cast<float>(C) + eps);
#pragma unroll
        for (int c = 0; c < MAXC; ++c) {
            if (c < C) {
                __stcs(out + base + static_cast<int64_t>(c) * hw, __fmul_rn(v[c] / rms, __ldg(w + c)));
            }
        }
    }
}

// Any C: read the column twice (the second read is often an L2 hit).
__global__ void rms_norm_loop_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                     float* __restrict__ out, int64_t positions, int64_t hw,
                                     int C, float eps) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t pos = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; pos < positions; pos += stride) {
        const int64_t b = pos / hw;
        const int64_t base = b * static_cast<int64_t>(C) * hw + (pos - b * hw);
        float ss = 0.0f;
        for (int c = 0; c < C; ++c) {
            const float v = __ldg(x + base + static_cast<int64_t>(c) * hw);
            ss = __fadd_rn(ss, __fmul_rn(v, v));
        }
        const float rms = sqrtf(ss / static_cast<float>(C) + eps);
        for (int c = 0; c < C; ++c) {
            const int64_t i = base + static_cast<int64_t>(c) * hw;
            out[i] = __fmul_rn(__ldg(x + i) / rms, __ldg(w + c));
        }
    }
}

int grid_for(int64_t work) {
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int64_t needed = (work + kThreads - 1) / kThreads;
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(needed, static_cast<int64_t>(sms) * 32)));
}

}  // namespace

// out[b, c, ...] = x[b, c, ...] / sqrt(mean_c(x^2) + eps) * weight[c]; a fresh tensor.
torch::Tensor rms_norm_channels(torch::Tensor x, torch::Tensor weight, double eps) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda(), "rms_norm_channels: expected CUDA tensors");
    TORCH_CHECK(x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat,
                "rms_norm_channels: expected float32");
    TORCH_CHECK(x.dim() >= 2, "rms_norm_channels: expected at least 2 dims (B, C, ...)");
    TORCH_CHECK(x.is_contiguous() && weight.is_contiguous(), "rms_norm_channels: expected contiguous tensors");
    TORCH_CHECK(weight.numel() == x.size(1), "rms_norm_channels: weight must have C elements");
    TORCH_CHECK(x.size(1) <= INT32_MAX, "rms_norm_channels: too many channels");
    const c10::cuda::CUDAGuard guard(x.device());
    auto out = torch::empty_like(x, x.options().memory_format(at::MemoryFormat::Contiguous));
    if (x.numel() == 0) return out;
    const int64_t B = x.size(0);
    const int C = static_cast<int>(x.size(1));
    const int64_t hw = x.numel() / (B * C);
    const int64_t positions = B * hw;
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    const float* xp = x.data_ptr<float>();
    const float* wp = weight.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const float e = static_cast<float>(eps);
    const int grid = grid_for(positions);
    if (C <= 16) {
        rms_norm_regs_kernel<16><<<grid, kThreads, 0, stream>>>(xp, wp, op, positions, hw, C, e);
    } else if (C <= 32) {
        rms_norm_regs_kernel<32><<<grid, kThreads, 0, stream>>>(xp, wp, op, positions, hw, C, e);
    } else if (C <= 64) {
        rms_norm_regs_kernel<64><<<grid, kThreads, 0, stream>>>(xp, wp, op, positions, hw, C, e);
    } else {
        rms_norm_loop_kernel<<<grid, kThreads, 0, stream>>>(xp, wp, op, positions, hw, C, e);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="kb_l1_23_cuda_rmsnorm",
    cpp_sources=_cpp_decl,
    cuda_sources=_cuda_source,
    functions=["rms_norm_channels"],
    extra_cuda_cflags=["-O3"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features, eps):
        super(ModelNew, self).__init__()
        self.weight = nn.Parameter(torch.randn(num_features))
        self.eps = eps

    def forward(self, x):
        return _ext.rms_norm_channels(x.contiguous(), self.weight.contiguous(), float(self.eps))
