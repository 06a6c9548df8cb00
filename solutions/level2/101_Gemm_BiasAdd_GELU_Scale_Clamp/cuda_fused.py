"""CUDA candidate: cuBLAS GEMM via nn.Linear, then one fused in-place kernel for
+ per-feature bias, exact GELU (erff), * scale, clamp (float4 vectorized, grid-stride)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_decl = r"""
#include <torch/extension.h>
torch::Tensor bias_gelu_scale_clamp_(torch::Tensor y, torch::Tensor bias, double scale, double lo, double hi);
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

// Same operation order as the reference: ((y + b) -> gelu) * scale -> clamp.
// GELU as ATen computes it: x * 0.5 * (1 + erf(x * M_SQRT1_2)), in float.
// Explicit _rn intrinsics keep nvcc from contracting the steps into FMAs.
// clamp like torch.clamp: NaN propagates (fminf/fmaxf would drop it).
__device__ __forceinline__ float epilogue(float v, float b, float scale, float lo, float hi) {
    const float x = __fadd_rn(v, b);
    const float g = __fmul_rn(__fmul_rn(x, 0.5f), __fadd_rn(1.0f, erff(__fmul_rn(x, 0.70710678118654752440f))));
    float s = __fmul_rn(g, scale);
    if (s != s) return s;
    s = s < lo ? lo : s;
    return s > hi ? hi : s;
}

// Requires F % 4 == 0: the 4 lanes of a float4 are 4 consecutive features of one row.
__global__ void epilogue_vec4_kernel(float4* __restrict__ y, int64_t n4, int64_t F4,
                                     const float4* __restrict__ bias4, float scale, float lo, float hi) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const float4 b = __ldg(bias4 + (i % F4));
        float4 v = y[i];
        v.x = epilogue(v.x, b.x, scale, lo, hi);
        v.y = epilogue(v.y, b.y, scale, lo, hi);
        v.z = epilogue(v.z, b.z, scale, lo, hi);
        v.w = epilogue(v.w, b.w, scale, lo, hi);
        y[i] = v;
    }
}

__global__ void epilogue_scalar_kernel(float* __restrict__ y, int64_t n, int64_t F,
                                       const float* __restrict__ bias, float scale, float lo, float hi) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = epilogue(y[i], __ldg(bias + (i % F)), scale, lo, hi);
    }
}

int grid_for(int64_t work) {
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int64_t needed = (work + kThreads - 1) / kThreads;
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(needed, static_cast<int64_t>(sms) * 8)));
}

}  // namespace

// y: [N, F] contiguous float32 CUDA tensor (the Linear output), modified in place:
//   y = clamp(gelu(y + bias) * scale, lo, hi), bias of F elements. Returns y.
torch::Tensor bias_gelu_scale_clamp_(torch::Tensor y, torch::Tensor bias, double scale, double lo, double hi) {
    TORCH_CHECK(y.is_cuda(), "bias_gelu_scale_clamp_: expected a CUDA tensor");
    TORCH_CHECK(y.scalar_type() == at::kFloat, "bias_gelu_scale_clamp_: expected float32");
    TORCH_CHECK(y.is_contiguous() && y.dim() == 2, "bias_gelu_scale_clamp_: expected a contiguous [N, F] tensor");
    TORCH_CHECK(bias.is_cuda() && bias.device() == y.device(), "bias_gelu_scale_clamp_: bias must be on y's device");
    TORCH_CHECK(bias.scalar_type() == at::kFloat && bias.is_contiguous(), "bias_gelu_scale_clamp_: bias must be contiguous float32");
    const int64_t F = y.size(1);
    TORCH_CHECK(bias.numel() == F, "bias_gelu_scale_clamp_: bias must have F elements");
    const int64_t n = y.numel();
    if (n == 0) return y;
    const c10::cuda::CUDAGuard guard(y.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    float* p = y.data_ptr<float>();
    const float* b = bias.data_ptr<float>();
    const float s = static_cast<float>(scale);
    const float l = static_cast<float>(lo);
    const float h = static_cast<float>(hi);
    if (F % 4 == 0 && reinterpret_cast<uintptr_t>(p) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0) {
        const int64_t n4 = n / 4;
        epilogue_vec4_kernel<<<grid_for(n4), kThreads, 0, stream>>>(
            reinterpret_cast<float4*>(p), n4, F / 4, reinterpret_cast<const float4*>(b), s, l, h);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    } else {
        epilogue_scalar_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, n, F, b, s, l, h);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return y;
}
"""

_ext = load_inline(
    name="kb_l2_101_cuda_fused",
    cpp_sources=_cpp_decl,
    cuda_sources=_cuda_source,
    functions=["bias_gelu_scale_clamp_"],
    extra_cuda_cflags=["-O3"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape, scale, clamp_min, clamp_max):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        y = self.linear(x).contiguous()
        return _ext.bias_gelu_scale_clamp_(y, self.bias.contiguous(), float(self.scale),
                                           float(self.clamp_min), float(self.clamp_max))
