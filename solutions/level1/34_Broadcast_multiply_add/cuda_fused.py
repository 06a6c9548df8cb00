"""CUDA candidate: a * b + c with a (B, N), b a broadcast row, c a broadcast column, in one kernel.

The reference runs two kernels and writes a full-size temporary in between (four passes
over B*N floats); this reads a once and writes the output once, float4 along each row
(scalar when N is not a multiple of 4 or a pointer is not 16-byte aligned). The product
and the sum are rounded separately (__fmul_rn, then __fadd_rn), as the two torch kernels
do, so nvcc cannot contract them into one FMA and the result is bitwise the reference's.
Shapes other than that pattern are expanded to the output shape and go through a plain
elementwise kernel."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_decl = r"""
#include <torch/extension.h>
torch::Tensor row_mul_col_add(torch::Tensor a, torch::Tensor b, torch::Tensor c);
torch::Tensor mul_add_full(torch::Tensor a, torch::Tensor b, torch::Tensor c);
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

__device__ __forceinline__ float mul_add(float a, float b, float c) {
    return __fadd_rn(__fmul_rn(a, b), c);
}

// grid.y walks rows (grid-stride, gridDim.y is capped), grid.x * block walks float4 columns.
__global__ void row_mul_col_add_vec4_kernel(const float4* __restrict__ a, const float4* __restrict__ b,
                                            const float* __restrict__ c, float4* __restrict__ out,
                                            int64_t rows, int64_t n4) {
    const int64_t col_stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        const float cr = __ldg(c + r);
        const float4* ar = a + r * n4;
        float4* orow = out + r * n4;
        for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n4; j += col_stride) {
            const float4 av = __ldcs(ar + j);
            const float4 bv = __ldg(b + j);
            float4 o;
            o.x = mul_add(av.x, bv.x, cr);
            o.y = mul_add(av.y, bv.y, cr);
            o.z = mul_add(av.z, bv.z, cr);
            o.w = mul_add(av.w, bv.w, cr);
            __stcs(orow + j, o);
        }
    }
}

__global__ void row_mul_col_add_scalar_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                              const float* __restrict__ c, float* __restrict__ out,
                                              int64_t rows, int64_t n) {
    const int64_t col_stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        const float cr = __ldg(c + r);
        for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += col_stride) {
            out[r * n + j] = mul_add(__ldg(a + r * n + j), __ldg(b + j), cr);
        }
    }
}

__global__ void mul_add_full_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                    const float* __restrict__ c, float* __restrict__ out, int64_t n) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = mul_add(__ldg(a + i), __ldg(b + i), __ldg(c + i));
    }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void check_float_cuda(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda(), what, ": expected a CUDA tensor");
    TORCH_CHECK(t.scalar_type() == at::kFloat, what, ": expected float32");
    TORCH_CHECK(t.is_contiguous(), what, ": expected a contiguous tensor");
}

}  // namespace

// out[r, j] = a[r, j] * b[j] + c[r] for a (rows, n), b with n elements, c with rows elements.
torch::Tensor row_mul_col_add(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    check_float_cuda(a, "row_mul_col_add(a)");
    check_float_cuda(b, "row_mul_col_add(b)");
    check_float_cuda(c, "row_mul_col_add(c)");
    TORCH_CHECK(a.dim() == 2, "row_mul_col_add: a must be 2-D");
    const int64_t rows = a.size(0);
    const int64_t n = a.size(1);
    TORCH_CHECK(b.numel() == n && c.numel() == rows, "row_mul_col_add: b needs n elements, c rows elements");
    const c10::cuda::CUDAGuard guard(a.device());
    auto out = torch::empty({rows, n}, a.options());
    if (out.numel() == 0) return out;
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    const float* ap = a.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    const float* cp = c.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const int grid_y = static_cast<int>(std::min<int64_t>(rows, 65535));
    if (n % 4 == 0 && aligned16(ap) && aligned16(bp) && aligned16(op)) {
        const int64_t n4 = n / 4;
        const int grid_x = static_cast<int>(std::min<int64_t>((n4 + kThreads - 1) / kThreads, 65535));
        row_mul_col_add_vec4_kernel<<<dim3(grid_x, grid_y), kThreads, 0, stream>>>(
            reinterpret_cast<const float4*>(ap), reinterpret_cast<const float4*>(bp), cp,
            reinterpret_cast<float4*>(op), rows, n4);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    } else {
        const int grid_x = static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535));
        row_mul_col_add_scalar_kernel<<<dim3(grid_x, grid_y), kThreads, 0, stream>>>(ap, bp, cp, op, rows, n);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return out;
}

// out = a * b + c elementwise over three tensors of the same shape.
torch::Tensor mul_add_full(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    check_float_cuda(a, "mul_add_full(a)");
    check_float_cuda(b, "mul_add_full(b)");
    check_float_cuda(c, "mul_add_full(c)");
    TORCH_CHECK(a.sizes() == b.sizes() && a.sizes() == c.sizes(), "mul_add_full: shapes differ");
    const c10::cuda::CUDAGuard guard(a.device());
    auto out = torch::empty(a.sizes(), a.options());
    const int64_t n = out.numel();
    if (n == 0) return out;
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int grid = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>((n + kThreads - 1) / kThreads,
                                                                           static_cast<int64_t>(sms) * 16)));
    mul_add_full_kernel<<<grid, kThreads, 0, stream>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                       c.data_ptr<float>(), out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="kb_l1_34_cuda_mul_add",
    cpp_sources=_cpp_decl,
    cuda_sources=_cuda_source,
    functions=["row_mul_col_add", "mul_add_full"],
    extra_cuda_cflags=["-O3"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, a, b, c):
        shape = torch.broadcast_shapes(a.shape, b.shape, c.shape)
        if (a.dim() == 2 and tuple(a.shape) == tuple(shape) and b.numel() == shape[1] and b.shape[-1] == shape[1]
                and c.numel() == shape[0] and c.dim() == 2 and c.shape[0] == shape[0]):
            return _ext.row_mul_col_add(a.contiguous(), b.contiguous(), c.contiguous())
        return _ext.mul_add_full(a.expand(shape).contiguous(), b.expand(shape).contiguous(),
                                 c.expand(shape).contiguous())
