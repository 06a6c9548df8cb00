"""CUDA candidate: cuDNN conv via nn.Conv2d, then one fused in-place kernel for
* scale, + per-channel bias, Mish (one grid row per (n, c) plane, float4 vectorized)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_decl = r"""
#include <torch/extension.h>
torch::Tensor scale_bias_mish_(torch::Tensor y, torch::Tensor bias, double scale);
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
constexpr int64_t kMaxGridY = 65535;

// Same order as the reference: (y * scale) + bias, then Mish as ATen computes it:
// x * tanh(log1p(exp(x))) in float (exp overflows to inf for large x, giving x * 1).
// Explicit _rn intrinsics keep nvcc from contracting y * scale + bias into an FMA.
__device__ __forceinline__ float epilogue(float v, float scale, float b) {
    const float x = __fadd_rn(__fmul_rn(v, scale), b);
    return __fmul_rn(x, tanhf(log1pf(expf(x))));
}

// Requires HW % 4 == 0 (a float4 never straddles two planes) and 16-byte alignment.
// blockIdx.y (strided) walks the N*C planes, blockIdx.x / threadIdx.x the plane's float4s.
__global__ void epilogue_vec4_kernel(float4* __restrict__ y, int64_t planes, int64_t hw4, int64_t C,
                                     const float* __restrict__ bias, float scale) {
    for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y) {
        const float b = __ldg(bias + (plane % C));
        float4* row = y + plane * hw4;
        for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < hw4;
             i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
            float4 v = row[i];
            v.x = epilogue(v.x, scale, b);
            v.y = epilogue(v.y, scale, b);
            v.z = epilogue(v.z, scale, b);
            v.w = epilogue(v.w, scale, b);
            row[i] = v;
        }
    }
}

__global__ void epilogue_scalar_kernel(float* __restrict__ y, int64_t planes, int64_t hw, int64_t C,
                                       const float* __restrict__ bias, float scale) {
    for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y) {
        const float b = __ldg(bias + (plane % C));
        float* row = y + plane * hw;
        for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < hw;
             i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
            row[i] = epilogue(row[i], scale, b);
        }
    }
}

dim3 grid_for(int64_t per_plane, int64_t planes) {
    const int64_t x = std::max<int64_t>(1, std::min<int64_t>((per_plane + kThreads - 1) / kThreads, 1024));
    const int64_t yb = std::max<int64_t>(1, std::min<int64_t>(planes, kMaxGridY));
    return dim3(static_cast<unsigned int>(x), static_cast<unsigned int>(yb));
}

}  // namespace

// y: [N, C, H, W] contiguous float32 CUDA tensor (the conv output), modified in place:
//   y = mish(y * scale + bias[c]), bias of C elements (any shape, e.g. (C, 1, 1)). Returns y.
torch::Tensor scale_bias_mish_(torch::Tensor y, torch::Tensor bias, double scale) {
    TORCH_CHECK(y.is_cuda(), "scale_bias_mish_: expected a CUDA tensor");
    TORCH_CHECK(y.scalar_type() == at::kFloat, "scale_bias_mish_: expected float32");
    TORCH_CHECK(y.dim() == 4 && y.is_contiguous(), "scale_bias_mish_: expected a contiguous [N, C, H, W] tensor");
    TORCH_CHECK(bias.is_cuda() && bias.device() == y.device(), "scale_bias_mish_: bias must be on y's device");
    TORCH_CHECK(bias.scalar_type() == at::kFloat && bias.is_contiguous(), "scale_bias_mish_: bias must be contiguous float32");
    const int64_t C = y.size(1);
    TORCH_CHECK(bias.numel() == C, "scale_bias_mish_: bias must have C elements");
    const int64_t planes = y.size(0) * C;
    const int64_t hw = y.size(2) * y.size(3);
    if (planes == 0 || hw == 0) return y;
    const c10::cuda::CUDAGuard guard(y.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    float* p = y.data_ptr<float>();
    const float* b = bias.data_ptr<float>();
    const float s = static_cast<float>(scale);
    if (hw % 4 == 0 && reinterpret_cast<uintptr_t>(p) % 16 == 0) {
        const int64_t hw4 = hw / 4;
        epilogue_vec4_kernel<<<grid_for(hw4, planes), kThreads, 0, stream>>>(
            reinterpret_cast<float4*>(p), planes, hw4, C, b, s);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    } else {
        epilogue_scalar_kernel<<<grid_for(hw, planes), kThreads, 0, stream>>>(p, planes, hw, C, b, s);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return y;
}
"""

_ext = load_inline(
    name="kb_l2_102_cuda_fused",
    cpp_sources=_cpp_decl,
    cuda_sources=_cuda_source,
    functions=["scale_bias_mish_"],
    extra_cuda_cflags=["-O3"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scale, bias_shape):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = self.conv(x).contiguous()
        return _ext.scale_bias_mish_(y, self.bias.contiguous(), float(self.scale))
