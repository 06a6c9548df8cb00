"""CUDA candidate: cuBLAS GEMM via nn.Linear, then one fused in-place kernel for
ReLU followed by x / divisor (float4 vectorized, grid-stride)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_decl = r"""
#include <torch/extension.h>
torch::Tensor relu_div_(torch::Tensor x, double divisor);
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

// relu keeps NaN (NaN < 0 is false), like torch.relu.
__device__ __forceinline__ float relu_div(float v, float d) {
    return (v < 0.0f ? 0.0f : v) / d;
}

__global__ void relu_div_vec4_kernel(float4* __restrict__ p, int64_t n4, float d) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = p[i];
        v.x = relu_div(v.x, d);
        v.y = relu_div(v.y, d);
        v.z = relu_div(v.z, d);
        v.w = relu_div(v.w, d);
        p[i] = v;
    }
}

__global__ void relu_div_scalar_kernel(float* __restrict__ p, int64_t n, float d) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        p[i] = relu_div(p[i], d);
    }
}

int grid_for(int64_t work) {
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int64_t needed = (work + kThreads - 1) / kThreads;
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(needed, static_cast<int64_t>(sms) * 8)));
}

}  // namespace

// In place: x = relu(x) / divisor. Returns x.
torch::Tensor relu_div_(torch::Tensor x, double divisor) {
    TORCH_CHECK(x.is_cuda(), "relu_div_: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == at::kFloat, "relu_div_: expected float32");
    TORCH_CHECK(x.is_contiguous(), "relu_div_: expected a contiguous tensor");
    const int64_t n = x.numel();
    if (n == 0) return x;
    const c10::cuda::CUDAGuard guard(x.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    float* p = x.data_ptr<float>();
    const float d = static_cast<float>(divisor);
    if (n % 4 == 0 && reinterpret_cast<uintptr_t>(p) % 16 == 0) {
        const int64_t n4 = n / 4;
        relu_div_vec4_kernel<<<grid_for(n4), kThreads, 0, stream>>>(reinterpret_cast<float4*>(p), n4, d);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    } else {
        relu_div_scalar_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, n, d);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return x;
}
"""

_ext = load_inline(
    name="kb_l2_63_cuda_fused_relu_div",
    cpp_sources=_cpp_decl,
    cuda_sources=_cuda_source,
    functions=["relu_div_"],
    extra_cuda_cflags=["-O3"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, divisor):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x):
        x = self.linear(x).contiguous()
        return _ext.relu_div_(x, float(self.divisor))
