"""CPU candidate: a * b + c (row b, column c broadcast) in one pass, rounded exactly like torch."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

namespace {

// One row: out[j] = (a[j] * b[j]) + c. The product is rounded to float before the add
// (built with -ffp-contract=off, so no FMA), which is what torch's two kernels give.
void mul_add_row(const float* __restrict__ a, const float* __restrict__ b, float c,
                 float* __restrict__ out, int64_t n) {
    for (int64_t j = 0; j < n; ++j) {
        const float p = a[j] * b[j];
        out[j] = p + c;
    }
}

}  // namespace

// a: (B, N), b: (1, N) or (N), c: (B, 1) or (B); returns a fresh (B, N) tensor.
torch::Tensor broadcast_mul_add(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    TORCH_CHECK(a.device().is_cpu() && b.device().is_cpu() && c.device().is_cpu(),
                "broadcast_mul_add: expected CPU tensors");
    TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat && c.scalar_type() == at::kFloat,
                "broadcast_mul_add: expected float32");
    TORCH_CHECK(a.dim() == 2, "broadcast_mul_add: a must be 2D (B, N)");
    TORCH_CHECK(a.is_contiguous() && b.is_contiguous() && c.is_contiguous(),
                "broadcast_mul_add: expected contiguous tensors");
    const int64_t rows = a.size(0);
    const int64_t n = a.size(1);
    TORCH_CHECK(b.numel() == n && (b.dim() == 1 || (b.dim() == 2 && b.size(0) == 1)),
                "broadcast_mul_add: b must be a row of ", n, " elements");
    TORCH_CHECK(c.numel() == rows && (c.dim() == 1 || (c.dim() == 2 && c.size(1) == 1)),
                "broadcast_mul_add: c must be a column of ", rows, " elements");
    auto out = torch::empty({rows, n}, a.options());
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    const float* pc = c.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1));
    at::parallel_for(0, rows, grain, [=](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            mul_add_row(pa + i * n, pb, pc[i], po + i * n, n);
        }
    });
    return out;
}
"""

_ext = load_inline(
    name="kb_l1_34_cpp_fused_broadcast_mul_add",
    cpp_sources=_cpp_source,
    functions=["broadcast_mul_add"],
    extra_cflags=["-O3", "-march=native", "-fno-trapping-math", "-fno-math-errno", "-ffp-contract=off", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, a, b, c):
        return _ext.broadcast_mul_add(a.contiguous(), b.contiguous(), c.contiguous())
