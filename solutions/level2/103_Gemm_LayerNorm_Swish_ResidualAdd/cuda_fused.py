"""CUDA candidate: cuBLAS GEMM via nn.Linear, then one fused in-place row kernel:
LayerNorm over the features (one block per row, row held in registers, two-pass
mean / biased variance with warp-shuffle block reductions), Swish, + the Linear output."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_decl = r"""
#include <torch/extension.h>
torch::Tensor layernorm_swish_residual_(torch::Tensor y, torch::Tensor weight, torch::Tensor bias, double eps);
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

constexpr int kMaxThreads = 256;
constexpr int kMaxVecPerThread = 8;   // register path: F / 4 <= 256 * 8, i.e. F <= 8192

__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Sum over the block in a fixed order (deterministic). red holds 33 floats; blockDim.x % 32 == 0.
__device__ __forceinline__ float block_sum(float v, float* red) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
    v = warp_sum(v);
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < nwarps ? red[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0) red[32] = t;
    }
    __syncthreads();
    const float r = red[32];
    __syncthreads();  // red is reused by the next reduction
    return r;
}

// z = layer_norm(x); out = silu(z) + x, with silu as ATen computes it: z / (1 + exp(-z)).
__device__ __forceinline__ float finish(float x, float mean, float rstd, float w, float b) {
    const float z = (x - mean) * rstd * w + b;
    return z / (1.0f + expf(-z)) + x;
}

// One block per row; the row's float4s stay in registers between the passes.
template <int VPT>
__global__ void ln_swish_res_vec4_kernel(float4* __restrict__ y, int64_t rows, int64_t F4,
                                         const float4* __restrict__ w4, const float4* __restrict__ b4, float eps) {
    __shared__ float red[33];
    const float inv_f = 1.0f / static_cast<float>(F4 * 4);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        float4* yr = y + row * F4;
        float4 v[VPT];
        float s = 0.0f;
        #pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int64_t idx = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
            if (idx < F4) {
                v[k] = yr[idx];
                s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
            } else {
                v[k] = make_float4(0.f, 0.f, 0.f, 0.f);
            }
        }
        const float mean = block_sum(s, red) * inv_f;
        float q = 0.0f;
        #pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int64_t idx = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
            if (idx < F4) {
                const float dx = v[k].x - mean, dy = v[k].y - mean, dz = v[k].z - mean, dw = v[k].w - mean;
                q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
            }
        }
        const float var = block_sum(q, red) * inv_f;
        const float rstd = rsqrtf(var + eps);
        #pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int64_t idx = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
            if (idx < F4) {
                const float4 w = __ldg(w4 + idx);
                const float4 b = __ldg(b4 + idx);
                float4 o;
                o.x = finish(v[k].x, mean, rstd, w.x, b.x);
                o.y = finish(v[k].y, mean, rstd, w.y, b.y);
                o.z = finish(v[k].z, mean, rstd, w.z, b.z);
                o.w = finish(v[k].w, mean, rstd, w.w, b.w);
                yr[idx] = o;
            }
        }
    }
}

// Any F, any alignment: three passes over the row in global memory (L1/L2 resident after the first).
__global__ void ln_swish_res_scalar_kernel(float* __restrict__ y, int64_t rows, int64_t F,
                                           const float* __restrict__ w, const float* __restrict__ b, float eps) {
    __shared__ float red[33];
    const float inv_f = 1.0f / static_cast<float>(F);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        float* yr = y + row * F;
        float s = 0.0f;
        for (int64_t i = threadIdx.x; i < F; i += blockDim.x) s += yr[i];
        const float mean = block_sum(s, red) * inv_f;
        float q = 0.0f;
        for (int64_t i = threadIdx.x; i < F; i += blockDim.x) {
            const float d = yr[i] - mean;
            q += d * d;
        }
        const float var = block_sum(q, red) * inv_f;
        const float rstd = rsqrtf(var + eps);
        for (int64_t i = threadIdx.x; i < F; i += blockDim.x) {
            yr[i] = finish(yr[i], mean, rstd, __ldg(w + i), __ldg(b + i));
        }
    }
}

unsigned int grid_for(int64_t rows) {
    return static_cast<unsigned int>(std::max<int64_t>(1, std::min<int64_t>(rows, 1 << 20)));
}

void check_param(const torch::Tensor& t, const torch::Tensor& y, int64_t F, const char* name) {
    TORCH_CHECK(t.is_cuda() && t.device() == y.device(), name, ": expected a CUDA tensor on y's device");
    TORCH_CHECK(t.scalar_type() == at::kFloat && t.is_contiguous(), name, ": expected contiguous float32");
    TORCH_CHECK(t.numel() == F, name, ": expected F elements");
}

}  // namespace

// y: [N, F] contiguous float32 CUDA tensor (the Linear output), modified in place:
//   y = silu(layer_norm(y; weight, bias, eps)) + y. Returns y.
torch::Tensor layernorm_swish_residual_(torch::Tensor y, torch::Tensor weight, torch::Tensor bias, double eps) {
    TORCH_CHECK(y.is_cuda(), "layernorm_swish_residual_: expected a CUDA tensor");
    TORCH_CHECK(y.scalar_type() == at::kFloat, "layernorm_swish_residual_: expected float32");
    TORCH_CHECK(y.dim() == 2 && y.is_contiguous(), "layernorm_swish_residual_: expected a contiguous [N, F] tensor");
    const int64_t rows = y.size(0);
    const int64_t F = y.size(1);
    check_param(weight, y, F, "weight");
    check_param(bias, y, F, "bias");
    if (rows == 0 || F == 0) return y;
    const c10::cuda::CUDAGuard guard(y.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    float* p = y.data_ptr<float>();
    const float* w = weight.data_ptr<float>();
    const float* b = bias.data_ptr<float>();
    const float e = static_cast<float>(eps);
    const bool aligned = reinterpret_cast<uintptr_t>(p) % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(b) % 16 == 0;
    const int64_t F4 = F / 4;
    if (F % 4 == 0 && aligned && F4 <= static_cast<int64_t>(kMaxThreads) * kMaxVecPerThread) {
        const int threads = static_cast<int>(std::min<int64_t>(kMaxThreads, (F4 + 31) / 32 * 32));
        const int64_t vpt = (F4 + threads - 1) / threads;
        float4* p4 = reinterpret_cast<float4*>(p);
        const float4* w4 = reinterpret_cast<const float4*>(w);
        const float4* b4 = reinterpret_cast<const float4*>(b);
        const unsigned int grid = grid_for(rows);
        if (vpt <= 1) {
            ln_swish_res_vec4_kernel<1><<<grid, threads, 0, stream>>>(p4, rows, F4, w4, b4, e);
        } else if (vpt <= 2) {
            ln_swish_res_vec4_kernel<2><<<grid, threads, 0, stream>>>(p4, rows, F4, w4, b4, e);
        } else if (vpt <= 4) {
            ln_swish_res_vec4_kernel<4><<<grid, threads, 0, stream>>>(p4, rows, F4, w4, b4, e);
        } else {
            ln_swish_res_vec4_kernel<8><<<grid, threads, 0, stream>>>(p4, rows, F4, w4, b4, e);
        }
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    } else {
        const int threads = static_cast<int>(std::min<int64_t>(kMaxThreads, (F + 31) / 32 * 32));
        ln_swish_res_scalar_kernel<<<grid_for(rows), threads, 0, stream>>>(p, rows, F, w, b, e);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return y;
}
"""

_ext = load_inline(
    name="kb_l2_103_cuda_fused",
    cpp_sources=_cpp_decl,
    cuda_sources=_cuda_source,
    functions=["layernorm_swish_residual_"],
    extra_cuda_cflags=["-O3"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, eps):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features, eps=eps)

    def forward(self, x):
        y = self.linear(x).contiguous()
        return _ext.layernorm_swish_residual_(y, self.norm.weight.contiguous(), self.norm.bias.contiguous(),
                                              float(self.norm.eps))
