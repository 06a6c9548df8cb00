"""CUDA candidate: mean((p - t)^2) in one read of both inputs, deterministic.

The reference writes the squared differences to a full-size temporary and reads it back
for the mean (four passes); here a fixed grid of blocks streams p and t once with float4
loads (four of each in flight per thread), each thread squares and sums in float per
float4 and adds into a double, and each block reduces its threads (warp shuffles, then
shared memory) into one double partial. A second one-block kernel sums the partials in a
fixed order and divides by the element count, so the same inputs always give the same
bits. Scalar loads when a pointer is not 16-byte aligned; a scalar tail when numel is
not a multiple of 4."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_decl = r"""
#include <torch/extension.h>
torch::Tensor mse_mean(torch::Tensor p, torch::Tensor t);
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
constexpr int kFinalThreads = 1024;
constexpr int kUnroll = 4;

__device__ __forceinline__ float sq_diff(float p, float t) {
    const float d = p - t;
    return d * d;
}

__device__ __forceinline__ float sq_diff4(const float4 p, const float4 t) {
    return (sq_diff(p.x, t.x) + sq_diff(p.y, t.y)) + (sq_diff(p.z, t.z) + sq_diff(p.w, t.w));
}

// Block-wide sum in a fixed order; every thread gets the result.
__device__ double block_sum(double v) {
    __shared__ double warp_sums[32];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    const int nwarps = (blockDim.x + 31) >> 5;
    double s = lane < nwarps ? warp_sums[lane] : 0.0;
    if (warp == 0) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
        if (lane == 0) warp_sums[0] = s;
    }
    __syncthreads();
    const double total = warp_sums[0];
    __syncthreads();
    return total;
}

// Per-block partial sums of (p - t)^2 over float4 elements [0, n4) plus, in block 0,
// the scalar tail [4 * n4, n).
__global__ void mse_partial_vec4_kernel(const float4* __restrict__ p, const float4* __restrict__ t,
                                        int64_t n4, const float* __restrict__ ps, const float* __restrict__ ts,
                                        int64_t n, double* __restrict__ partials) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    double acc = 0.0;
    for (; i + (kUnroll - 1) * stride < n4; i += kUnroll * stride) {
        float4 pv[kUnroll], tv[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            pv[k] = __ldcs(p + i + k * stride);
            tv[k] = __ldcs(t + i + k * stride);
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) acc += static_cast<double>(sq_diff4(pv[k], tv[k]));
    }
    for (; i < n4; i += stride) acc += static_cast<double>(sq_diff4(__ldcs(p + i), __ldcs(t + i)));
    if (blockIdx.x == 0) {
        for (int64_t j = 4 * n4 + threadIdx.x; j < n; j += blockDim.x) acc += static_cast<double>(sq_diff(ps[j], ts[j]));
    }
    const double s = block_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void mse_partial_scalar_kernel(const float* __restrict__ p, const float* __restrict__ t, int64_t n,
                                          double* __restrict__ partials) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    double acc = 0.0;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        acc += static_cast<double>(sq_diff(__ldg(p + i), __ldg(t + i)));
    }
    const double s = block_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// One block: sum the partials in a fixed order, divide by n.
__global__ void mean_final_kernel(const double* __restrict__ partials, int nparts, double n, float* __restrict__ out) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) acc += partials[i];
    const double s = block_sum(acc);
    if (threadIdx.x == 0) out[0] = static_cast<float>(s / n);
}

bool aligned16(const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; }

}  // namespace

// mean((p - t)^2) as a 0-dim float32 tensor.
torch::Tensor mse_mean(torch::Tensor p, torch::Tensor t) {
    TORCH_CHECK(p.is_cuda() && t.is_cuda(), "mse_mean: expected CUDA tensors");
    TORCH_CHECK(p.scalar_type() == at::kFloat && t.scalar_type() == at::kFloat, "mse_mean: expected float32");
    TORCH_CHECK(p.is_contiguous() && t.is_contiguous(), "mse_mean: expected contiguous tensors");
    TORCH_CHECK(p.numel() == t.numel(), "mse_mean: sizes differ");
    const c10::cuda::CUDAGuard guard(p.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    const int64_t n = p.numel();
    const float* pp = p.data_ptr<float>();
    const float* tp = t.data_ptr<float>();
    const bool vec = aligned16(pp) && aligned16(tp);
    const int64_t work = vec ? n / 4 : n;
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int grid = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>((work + kThreads - 1) / kThreads,
                                                                           static_cast<int64_t>(sms) * 8)));
    auto partials = torch::empty({grid}, p.options().dtype(at::kDouble));
    auto out = torch::empty({}, p.options());
    double* part = partials.data_ptr<double>();
    if (vec) {
        mse_partial_vec4_kernel<<<grid, kThreads, 0, stream>>>(reinterpret_cast<const float4*>(pp),
                                                              reinterpret_cast<const float4*>(tp), n / 4,
                                                              pp, tp, n, part);
    } else {
        mse_partial_scalar_kernel<<<grid, kThreads, 0, stream>>>(pp, tp, n, part);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    mean_final_kernel<<<1, kFinalThreads, 0, stream>>>(part, grid, static_cast<double>(n), out.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="kb_l1_30_cuda_mse",
    cpp_sources=_cpp_decl,
    cuda_sources=_cuda_source,
    functions=["mse_mean"],
    extra_cuda_cflags=["-O3"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, predictions, targets):
        if predictions.shape != targets.shape:
            predictions, targets = torch.broadcast_tensors(predictions, targets)
        return _ext.mse_mean(predictions.contiguous(), targets.contiguous())
