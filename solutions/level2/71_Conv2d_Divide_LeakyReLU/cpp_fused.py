"""CPU candidate: nn.Conv2d in torch, then one fused in-place pass for divide + LeakyReLU."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

namespace {

// Contiguous range [begin, end): p = p / d, then LeakyReLU(slope). Restrict-qualified
// parameters let the compiler vectorize the loop.
void div_leaky_range(float* __restrict__ p, int64_t begin, int64_t end, float d, float slope) {
    for (int64_t i = begin; i < end; ++i) {
        const float v = p[i] / d;
        const float neg = v * slope;
        p[i] = v > 0.0f ? v : neg;
    }
}

}  // namespace

// x = leaky_relu(x / divisor, slope), in place on x (the conv output).
torch::Tensor div_leaky_relu_(torch::Tensor x, double divisor, double slope) {
    TORCH_CHECK(x.device().is_cpu(), "div_leaky_relu_: expected a CPU tensor");
    TORCH_CHECK(x.scalar_type() == at::kFloat, "div_leaky_relu_: expected float32");
    TORCH_CHECK(x.is_contiguous(), "div_leaky_relu_: expected a contiguous tensor");
    float* data = x.data_ptr<float>();
    const float d = static_cast<float>(divisor);
    const float s = static_cast<float>(slope);
    at::parallel_for(0, x.numel(), 32768, [data, d, s](int64_t begin, int64_t end) {
        div_leaky_range(data, begin, end, d, s);
    });
    return x;
}
"""

_ext = load_inline(
    name="kb_l2_71_cpp_fused_div_leaky",
    cpp_sources=_cpp_source,
    functions=["div_leaky_relu_"],
    extra_cflags=["-O3", "-march=native", "-fno-trapping-math", "-fno-math-errno", "-ffp-contract=fast", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
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
