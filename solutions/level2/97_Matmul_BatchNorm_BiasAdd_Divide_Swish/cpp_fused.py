"""CPU candidate: nn.Linear in torch, then a fused BatchNorm1d (batch statistics
in training mode, running-stat update) + bias add + divide + Swish, in place.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

inline float bits_to_float(int32_t i) {
    float f;
    std::memcpy(&f, &i, sizeof(f));
    return f;
}

// exp(x), inputs clamped to [-87, 88]; ~1-2 ulp; branch free (vectorizable).
inline float exp_cw(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    const float shifter = 12582912.0f;
    const float kf = (x * 1.44269504088896341f + shifter) - shifter;
    const int32_t k = static_cast<int32_t>(kf);
    float r = x - kf * 0.693359375f;
    r = r - kf * (-2.12194440e-4f);
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

}  // namespace

// y: [N, F] contiguous float32 (the Linear output), modified in place:
//   y = bn(y); y = (y + extra_bias) / divide; y = y * sigmoid(y)
// training=true: batch mean / biased batch variance normalize, and the running
// buffers are updated with `momentum` (running_var with the unbiased variance).
// training=false: running_mean / running_var normalize.
torch::Tensor bn_bias_div_swish_(torch::Tensor y,
                                 torch::Tensor bn_weight, torch::Tensor bn_bias,
                                 torch::Tensor running_mean, torch::Tensor running_var,
                                 torch::Tensor extra_bias,
                                 double divide, double eps, double momentum, bool training) {
    TORCH_CHECK(y.device().is_cpu(), "bn_bias_div_swish_: expected CPU tensors");
    TORCH_CHECK(y.scalar_type() == at::kFloat, "bn_bias_div_swish_: expected float32");
    TORCH_CHECK(y.is_contiguous() && y.dim() == 2, "bn_bias_div_swish_: expected a contiguous 2D input");
    const int64_t N = y.size(0);
    const int64_t F = y.size(1);
    for (const auto& t : {bn_weight, bn_bias, running_mean, running_var}) {
        TORCH_CHECK(t.scalar_type() == at::kFloat && t.is_contiguous() && t.numel() == F,
                    "bn_bias_div_swish_: per-feature tensors must be contiguous float32 with F elements");
    }
    TORCH_CHECK(extra_bias.scalar_type() == at::kFloat && (extra_bias.numel() == 1 || extra_bias.numel() == F),
                "bn_bias_div_swish_: bias must have 1 or F elements");
    if (training) {
        TORCH_CHECK(N > 1, "Expected more than 1 value per channel when training");
    }
    auto eb = extra_bias.contiguous();
    const float* ebp = eb.data_ptr<float>();
    const int64_t eb_stride = eb.numel() == 1 ? 0 : 1;
    float* yp = y.data_ptr<float>();
    const float* w = bn_weight.data_ptr<float>();
    const float* b = bn_bias.data_ptr<float>();
    float* rm = running_mean.data_ptr<float>();
    float* rv = running_var.data_ptr<float>();

    // Per-feature affine: bn(y) = y * alpha + beta (same form as ATen's CPU kernel);
    // the scalar/feature bias is folded into beta after the bn rounding step below.
    std::vector<float> alpha(F), beta(F);

    if (training) {
        // Column statistics in double, two passes, parallel over column blocks.
        at::parallel_for(0, F, 64, [&](int64_t c0, int64_t c1) {
            const int64_t w_cols = c1 - c0;
            std::vector<double> acc(w_cols, 0.0), mean(w_cols), sq(w_cols, 0.0);
            for (int64_t r = 0; r < N; ++r) {
                const float* row = yp + r * F + c0;
                double* __restrict__ a = acc.data();
                for (int64_t c = 0; c < w_cols; ++c) a[c] += row[c];
            }
            for (int64_t c = 0; c < w_cols; ++c) mean[c] = acc[c] / static_cast<double>(N);
            for (int64_t r = 0; r < N; ++r) {
                const float* row = yp + r * F + c0;
                const double* __restrict__ mu = mean.data();
                double* __restrict__ q = sq.data();
                for (int64_t c = 0; c < w_cols; ++c) {
                    const double d = static_cast<double>(row[c]) - mu[c];
                    q[c] += d * d;
                }
            }
            for (int64_t c = 0; c < w_cols; ++c) {
                const int64_t f = c0 + c;
                const double var = sq[c] / static_cast<double>(N);
                const double invstd = 1.0 / std::sqrt(var + eps);
                const double a = invstd * static_cast<double>(w[f]);
                alpha[f] = static_cast<float>(a);
                beta[f] = static_cast<float>(static_cast<double>(b[f]) - mean[c] * a);
                const double unbiased = sq[c] / static_cast<double>(N - 1);
                rm[f] = static_cast<float>(momentum * mean[c] + (1.0 - momentum) * static_cast<double>(rm[f]));
                rv[f] = static_cast<float>(momentum * unbiased + (1.0 - momentum) * static_cast<double>(rv[f]));
            }
        });
    } else {
        for (int64_t f = 0; f < F; ++f) {
            const double invstd = 1.0 / std::sqrt(static_cast<double>(rv[f]) + eps);
            const double a = invstd * static_cast<double>(w[f]);
            alpha[f] = static_cast<float>(a);
            beta[f] = static_cast<float>(static_cast<double>(b[f]) - static_cast<double>(rm[f]) * a);
        }
    }

    std::vector<float> ebias(F);
    for (int64_t f = 0; f < F; ++f) ebias[f] = ebp[f * eb_stride];
    const float d = static_cast<float>(divide);
    const int64_t grain_rows = std::max<int64_t>(1, 32768 / std::max<int64_t>(F, 1));
    at::parallel_for(0, N, grain_rows, [&](int64_t r0, int64_t r1) {
        const float* __restrict__ al = alpha.data();
        const float* __restrict__ be = beta.data();
        const float* __restrict__ bb = ebias.data();
        for (int64_t r = r0; r < r1; ++r) {
            float* __restrict__ row = yp + r * F;
            for (int64_t c = 0; c < F; ++c) {
                float v = row[c] * al[c] + be[c];   // batch norm
                v = (v + bb[c]) / d;                 // bias add, divide
                const float sig = 1.0f / (1.0f + exp_cw(-v));
                row[c] = v * sig;                    // swish
            }
        }
    });
    return y;
}
"""

_ext = load_inline(
    name="kb_l2_97_cpp_fused_bn_bias_div_swish",
    cpp_sources=_cpp_source,
    functions=["bn_bias_div_swish_"],
    extra_cflags=["-O3", "-march=native", "-fno-trapping-math", "-fno-math-errno"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bn_eps=1e-5, bn_momentum=0.1, bias_shape=(1,), divide_value=1.0):
        super(ModelNew, self).__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features, eps=bn_eps, momentum=bn_momentum)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.divide_value = divide_value

    def forward(self, x):
        y = self.matmul(x).contiguous()
        bn = self.bn
        use_batch_stats = self.training or bn.running_mean is None
        momentum = 0.0 if bn.momentum is None else bn.momentum
        if self.training and bn.track_running_stats and bn.num_batches_tracked is not None:
            bn.num_batches_tracked.add_(1)
            if bn.momentum is None:
                momentum = 1.0 / float(bn.num_batches_tracked)
        if bn.running_mean is not None:
            rm, rv = bn.running_mean, bn.running_var
        else:  # no running buffers: use scratch tensors that are discarded
            rm = torch.zeros(y.shape[1], dtype=y.dtype)
            rv = torch.ones(y.shape[1], dtype=y.dtype)
        if bn.affine:
            w, b = bn.weight.detach(), bn.bias.detach()
        else:
            w = torch.ones(y.shape[1], dtype=y.dtype)
            b = torch.zeros(y.shape[1], dtype=y.dtype)
        return _ext.bn_bias_div_swish_(
            y, w, b, rm, rv, self.bias.detach(),
            float(self.divide_value), float(bn.eps), float(momentum), bool(use_batch_stats))
