"""CUDA candidate: cuDNN conv via nn.Conv2d, then one fused in-place kernel for
x / divisor followed by LeakyReLU(0.01) (float4 vectorized, grid-stride)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_decl = r"""
#include <torch/extension.h>
torch::Tensor div_leaky_relu_(torch::Tensor x, double divisor, double slope);
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

__device__ __forceinline__ float div_leaky(float v, float d, float slope) {
    v = v / d;
    return v > 0.0f ? v : v * slope;
}

__global__ void div_leaky_vec4_kernel(float4* __restrict__ p, int64_t n4, float d, float slope) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = p[i];
        v.x = div_leaky(v.x, d, slope);
        v.y = div_leaky(v.y, d, slope);
        v.z = div_leaky(v.z, d, slope);
        v.w = div_leaky(v.w, d, slope);
        p[i] = v;
    }
}

__global__ void div_leaky_scalar_kernel(float* __restrict__ p, int64_t n, float d, float slope) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        p[i] = div_leaky(p[i], d, slope);
    }
}

int grid_for(int64_t work) {
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int64_t needed = (work + kThreads - 1) / kThreads;
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(needed, static_cast<int64_t>(sms) * 8)));
}

}  // namespace

// In place: x = leaky_relu(x / divisor, slope). Returns x.
torch::Tensor div_leaky_relu_(torch::Tensor x, double divisor, double slope) {
    TORCH_CHECK(x.is_cuda(), "div_leaky_relu_: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == at::kFloat, "div_leaky_relu_: expected float32");
    TORCH_CHECK(x.is_contiguous(), "div_leaky_relu_: expected a contiguous tensor");
    const int64_t n = x.numel();
    if (n == 0) return x;
    const c10::cuda::CUDAGuard guard(x.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    float* p = x.data_ptr<float>();
    const float d = static_cast<float>(divisor);
    const float s = static_cast<float>(slope);
    if (n % 4 == 0 && reinterpret_cast<uintptr_t>(p) % 16 == 0) {
        const int64_t n4 = n / 4;
        div_leaky_vec4_kernel<<<grid_for(n4), kThreads, 0, stream>>>(reinterpret_cast<float4*>(p), n4, d, s);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    } else {
        div_leaky_scalar_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, n, d, s);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return x;
}
"""

_ext = load_inline(
    name="kb_l2_71_cuda_fused_div_leaky",
    cpp_sources=_cpp_decl,
    cuda_sources=_cuda_source,
    functions=["div_leaky_relu_"],
    extra_cuda_cflags=["-O3"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, divisor):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.divisor = divisor

    def forward(self, x):
        x = self.conv(x).contiguous()
        return _ext.div_leaky_relu_(x, float(self.divisor), 0.01)
