"""CPU candidate: nn.Linear in torch, then one fused in-place pass for ReLU + divide."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

namespace {

// Contiguous range [begin, end): p = relu(p) / d (NaN propagates like torch.relu).
void relu_div_range(float* __restrict__ p, int64_t begin, int64_t end, float d) {
    for (int64_t i = begin; i < end; ++i) {
        const float v = p[i];
        p[i] = (v < 0.0f ? 0.0f : v) / d;
    }
}

}  // namespace

// x = relu(x) / divisor, in place on x (the linear output).
torch::Tensor relu_div_(torch::Tensor x, double divisor) {
    TORCH_CHECK(x.device().is_cpu(), "relu_div_: expected a CPU tensor");
    TORCH_CHECK(x.scalar_type() == at::kFloat, "relu_div_: expected float32");
    TORCH_CHECK(x.is_contiguous(), "relu_div_: expected a contiguous tensor");
    float* data = x.data_ptr<float>();
    const float d = static_cast<float>(divisor);
    at::parallel_for(0, x.numel(), 32768, [data, d](int64_t begin, int64_t end) {
        relu_div_range(data, begin, end, d);
    });
    return x;
}
"""

_ext = load_inline(
    name="kb_l2_63_cpp_fused_relu_div",
    cpp_sources=_cpp_source,
    functions=["relu_div_"],
    extra_cflags=["-O3", "-march=native", "-fno-trapping-math", "-fno-math-errno", "-ffp-contract=fast", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
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
