"""CPU candidate: RMSNorm over dim 1 of a 4D tensor in one fused pass (sum of squares, then scale)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cmath>

namespace {

constexpr int64_t kBlock = 256;  // spatial positions handled together, so loops run along contiguous memory

// One batch item, spatial positions [s0, s0 + len): x and out point at channel 0 of that item,
// channels are `hw` floats apart. Reference order: rms = sqrt(mean(x^2) + eps); out = x / rms * w.
void rms_norm_block(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out,
                    int64_t channels, int64_t hw, int64_t s0, int64_t len, float eps) {
    float acc[kBlock];
    for (int64_t s = 0; s < len; ++s) acc[s] = 0.0f;
    for (int64_t ch = 0; ch < channels; ++ch) {
        const float* __restrict__ xc = x + ch * hw + s0;
        for (int64_t s = 0; s < len; ++s) acc[s] += xc[s] * xc[s];
    }
    const float inv_c = 1.0f / static_cast<float>(channels);
    for (int64_t s = 0; s < len; ++s) acc[s] = std::sqrt(acc[s] * inv_c + eps);
    for (int64_t ch = 0; ch < channels; ++ch) {
        const float* __restrict__ xc = x + ch * hw + s0;
        float* __restrict__ oc = out + ch * hw + s0;
        const float wc = w[ch];
        for (int64_t s = 0; s < len; ++s) oc[s] = xc[s] / acc[s] * wc;
    }
}

}  // namespace

// x: (B, C, H, W) contiguous, weight: (C). Returns a fresh tensor of x's shape.
torch::Tensor rms_norm_dim1(torch::Tensor x, torch::Tensor weight, double eps) {
    TORCH_CHECK(x.device().is_cpu() && weight.device().is_cpu(), "rms_norm_dim1: expected CPU tensors");
    TORCH_CHECK(x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat, "rms_norm_dim1: expected float32");
    TORCH_CHECK(x.dim() >= 2, "rms_norm_dim1: x must have a channel dim");
    TORCH_CHECK(x.is_contiguous() && weight.is_contiguous(), "rms_norm_dim1: expected contiguous tensors");
    const int64_t batch = x.size(0);
    const int64_t channels = x.size(1);
    TORCH_CHECK(weight.numel() == channels, "rms_norm_dim1: weight must have ", channels, " elements");
    const int64_t hw = channels == 0 || batch == 0 ? 0 : x.numel() / (batch * channels);
    auto out = torch::empty_like(x);
    if (out.numel() == 0) return out;
    const float* px = x.data_ptr<float>();
    const float* pw = weight.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const float e = static_cast<float>(eps);
    const int64_t blocks_per_item = (hw + kBlock - 1) / kBlock;
    const int64_t tasks = batch * blocks_per_item;
    at::parallel_for(0, tasks, 1, [=](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            const int64_t b = t / blocks_per_item;
            const int64_t s0 = (t % blocks_per_item) * kBlock;
            const int64_t len = std::min<int64_t>(kBlock, hw - s0);
            const int64_t base = b * channels * hw;
            rms_norm_block(px + base, pw, po + base, channels, hw, s0, len, e);
        }
    });
    return out;
}
"""

_ext = load_inline(
    name="kb_l1_23_cpp_fused_rms_norm",
    cpp_sources=_cpp_source,
    functions=["rms_norm_dim1"],
    extra_cflags=["-O3", "-march=native", "-fno-trapping-math", "-fno-math-errno", "-ffp-contract=fast", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features, eps):
        super(ModelNew, self).__init__()
        self.weight = nn.Parameter(torch.randn(num_features))
        self.eps = eps

    def forward(self, x):
        return _ext.rms_norm_dim1(x.contiguous(), self.weight.contiguous(), float(self.eps))
