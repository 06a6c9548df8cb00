"""CPU candidate: nn.Conv2d in torch, then one fused in-place pass for
per-channel multiply + LeakyReLU(0.01) + exact (erf) GELU.

erf is evaluated with a branch-free rational/exponential form (absolute error
<= 1.5e-7) and a Cody-Waite exp, so that the inner loop auto-vectorizes.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <algorithm>
#include <cstdint>
#include <cstring>

namespace {

inline float bits_to_float(int32_t i) {
    float f;
    std::memcpy(&f, &i, sizeof(f));
    return f;
}

// exp(x) for x in float range; inputs are clamped to [-87, 88] (so results
// never overflow or go subnormal). Relative error ~1-2 ulp. Branch free.
inline float exp_cw(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    const float shifter = 12582912.0f;  // 1.5 * 2^23: rounds to nearest integer
    const float kf = (x * 1.44269504088896341f + shifter) - shifter;
    const int32_t k = static_cast<int32_t>(kf);
    float r = x - kf * 0.693359375f;      // ln2 high part (exact product)
    r = r - kf * (-2.12194440e-4f);       // ln2 low part
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    return p * bits_to_float((k + 127) << 23);
}

// gelu(x) = x * Phi(x), Phi(x) = 0.5 * (1 + erf(x / sqrt(2))). erf via the rational-exponential
// form erfc(z) ~= t * P(t) * exp(-z^2), t = 1 / (1 + p z), z = |x| / sqrt(2)
// (absolute error of erf <= 1.5e-7), evaluated branch free so the loop vectorizes.
inline float gelu_exact(float x) {
    const float z = std::fabs(x) * 0.70710678118654752f;
    const float t = 1.0f / (1.0f + 0.3275911f * z);
    float p = 1.061405429f;
    p = p * t - 1.453152027f;
    p = p * t + 1.421413741f;
    p = p * t - 0.284496736f;
    p = p * t + 0.254829592f;
    const float half_erfc = 0.5f * (p * t) * exp_cw(-(z * z));
    const float phi = x >= 0.0f ? 1.0f - half_erfc : half_erfc;
    return x * phi;
}

// Contiguous range [begin, end) of one (n, c) plane with multiplier mc.
void mul_leaky_gelu_range(float* __restrict__ p, int64_t begin, int64_t end, float mc, float slope) {
    for (int64_t j = begin; j < end; ++j) {
        const float v = p[j] * mc;
        const float neg = v * slope;
        p[j] = gelu_exact(v > 0.0f ? v : neg);
    }
}

}  // namespace

// x: [N, C, *spatial] contiguous float32, multiplier: C elements.
// x = gelu(leaky_relu(x * multiplier[c], slope)), in place.
torch::Tensor mul_leaky_gelu_(torch::Tensor x, torch::Tensor multiplier, double slope) {
    TORCH_CHECK(x.device().is_cpu() && multiplier.device().is_cpu(), "mul_leaky_gelu_: expected CPU tensors");
    TORCH_CHECK(x.scalar_type() == at::kFloat && multiplier.scalar_type() == at::kFloat,
                "mul_leaky_gelu_: expected float32 tensors");
    TORCH_CHECK(x.is_contiguous(), "mul_leaky_gelu_: expected a contiguous input");
    TORCH_CHECK(x.dim() >= 2, "mul_leaky_gelu_: expected at least 2 dims (N, C, ...)");
    const int64_t C = x.size(1);
    TORCH_CHECK(multiplier.numel() == C, "mul_leaky_gelu_: multiplier must have C elements");
    auto mult = multiplier.contiguous();
    const float* m = mult.data_ptr<float>();
    float* data = x.data_ptr<float>();
    const int64_t n = x.numel();
    if (n == 0) return x;
    const int64_t plane = n / (x.size(0) * C);  // elements per (n, c) plane, > 0 here
    const float s = static_cast<float>(slope);
    at::parallel_for(0, n, 16384, [data, m, plane, C, s](int64_t begin, int64_t end) {
        int64_t i = begin;
        while (i < end) {  // split [begin, end) at (n, c) plane boundaries
            const int64_t pidx = i / plane;
            const int64_t stop = std::min(end, (pidx + 1) * plane);
            mul_leaky_gelu_range(data, i, stop, m[pidx % C], s);
            i = stop;
        }
    });
    return x;
}
"""

_ext = load_inline(
    name="kb_l2_54_cpp_fused_mul_leaky_gelu",
    cpp_sources=_cpp_source,
    functions=["mul_leaky_gelu_"],
    extra_cflags=["-O3", "-march=native", "-fno-trapping-math", "-fno-math-errno", "-ffp-contract=fast", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, multiplier_shape):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.multiplier = nn.Parameter(torch.randn(multiplier_shape))
        self.leaky_relu = nn.LeakyReLU()

    def forward(self, x):
        x = self.conv(x).contiguous()
        return _ext.mul_leaky_gelu_(x, self.multiplier.detach(), float(self.leaky_relu.negative_slope))
