"""CUDA candidate: cross entropy of (N, C) logits against int64 targets, mean reduction.

The reference writes the full log_softmax matrix and reads it back in nll_loss; here one
block per row reads its logits once (float4 when C is a multiple of 4 and the pointer is
16-byte aligned, four loads in flight per thread) and keeps an online (max, sum of
exp(x - max)) pair per thread, merged across the block with warp shuffles and shared
memory in a fixed order. The row's loss, -((x[target] - max) - log(sum)) as torch's
log_softmax + nll_loss compute it, goes to a per-row buffer; a second one-block kernel
sums those in double in a fixed order and divides by the number of rows whose target is
not ignore_index (-100), so the same inputs always give the same bits."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cpp_decl = r"""
#include <torch/extension.h>
torch::Tensor cross_entropy_mean(torch::Tensor logits, torch::Tensor targets, int64_t ignore_index);
"""

_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kFinalThreads = 1024;
constexpr int kUnroll = 4;

// Running softmax denominator: sum of exp(x - m) over the values seen, m their max.
struct MaxSum {
    float m;
    float s;
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.0f};
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

// Fold a batch of values whose max is bm into the running pair.
__device__ __forceinline__ void rescale(MaxSum& st, float bm) {
    if (bm > st.m) {
        st.s *= expf(st.m - bm);
        st.m = bm;
    }
}

__device__ MaxSum block_merge(MaxSum st) {
    __shared__ float sm[32];
    __shared__ float ss[32];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        MaxSum o;
        o.m = __shfl_down_sync(0xffffffffu, st.m, off);
        o.s = __shfl_down_sync(0xffffffffu, st.s, off);
        st = merge(st, o);
    }
    if (lane == 0) {
        sm[warp] = st.m;
        ss[warp] = st.s;
    }
    __syncthreads();
    const int nwarps = (blockDim.x + 31) >> 5;
    if (warp == 0) {
        MaxSum w = lane < nwarps ? MaxSum{sm[lane], ss[lane]} : MaxSum{-INFINITY, 0.0f};
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            MaxSum o;
            o.m = __shfl_down_sync(0xffffffffu, w.m, off);
            o.s = __shfl_down_sync(0xffffffffu, w.s, off);
            w = merge(w, o);
        }
        if (lane == 0) {
            sm[0] = w.m;
            ss[0] = w.s;
        }
    }
    __syncthreads();
    return {sm[0], ss[0]};
}

template <bool VEC>
__global__ void ce_rows_kernel(const float* __restrict__ logits, const int64_t* __restrict__ targets,
                               int64_t rows, int64_t C, int64_t ignore_index, float* __restrict__ row_loss) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* row = logits + r * C;
        MaxSum st{-INFINITY, 0.0f};
        if (VEC) {
            const float4* row4 = reinterpret_cast<const float4*>(row);
            const int64_t n4 = C / 4;
            const int64_t step = blockDim.x;
            for (int64_t i = threadIdx.x; i < n4; i += kUnroll * step) {
                float4 v[kUnroll];
#pragma unroll
                for (int k = 0; k < kUnroll; ++k) {
                    const int64_t j = i + k * step;
                    v[k] = j < n4 ? __ldcs(row4 + j) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
                }
                float bm = st.m;
#pragma unroll
                for (int k = 0; k < kUnroll; ++k) bm = fmaxf(bm, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
                rescale(st, bm);
                if (st.m != -INFINITY) {
#pragma unroll
                    for (int k = 0; k < kUnroll; ++k) {
                        st.s += expf(v[k].x - st.m) + expf(v[k].y - st.m) + expf(v[k].z - st.m) + expf(v[k].w - st.m);
                    }
                }
            }
        } else {
            for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
                const float v = __ldg(row + i);
                rescale(st, v);
                if (st.m != -INFINITY) st.s += expf(v - st.m);
            }
        }
        const MaxSum tot = block_merge(st);
        if (threadIdx.x == 0) {
            const int64_t t = targets[r];
            float loss = 0.0f;
            if (t != ignore_index && t >= 0 && t < C) {
                loss = -((__ldg(row + t) - tot.m) - logf(tot.s));
            }
            row_loss[r] = loss;
        }
        __syncthreads();  // the shared scratch of block_merge is reused by the next row
    }
}

__device__ double block_sum(double v) {
    __shared__ double warp_sums[32];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    const int nwarps = (blockDim.x + 31) >> 5;
    double s = lane < nwarps ? warp_sums[lane] : 0.0;
    if (warp == 0) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
        if (lane == 0) warp_sums[0] = s;
    }
    __syncthreads();
    const double total = warp_sums[0];
    __syncthreads();
    return total;
}

// One block: loss = sum(row_loss) / (number of rows whose target is not ignored), fixed order.
__global__ void ce_mean_kernel(const float* __restrict__ row_loss, const int64_t* __restrict__ targets,
                               int64_t rows, int64_t ignore_index, float* __restrict__ out) {
    double acc = 0.0;
    double cnt = 0.0;
    for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
        acc += static_cast<double>(row_loss[i]);
        cnt += targets[i] != ignore_index ? 1.0 : 0.0;
    }
    const double s = block_sum(acc);
    const double c = block_sum(cnt);
    if (threadIdx.x == 0) out[0] = static_cast<float>(s / c);
}

}  // namespace

torch::Tensor cross_entropy_mean(torch::Tensor logits, torch::Tensor targets, int64_t ignore_index) {
    TORCH_CHECK(logits.is_cuda() && targets.is_cuda(), "cross_entropy_mean: expected CUDA tensors");
    TORCH_CHECK(logits.scalar_type() == at::kFloat, "cross_entropy_mean: expected float32 logits");
    TORCH_CHECK(targets.scalar_type() == at::kLong, "cross_entropy_mean: expected int64 targets");
    TORCH_CHECK(logits.dim() == 2, "cross_entropy_mean: expected (N, C) logits");
    TORCH_CHECK(targets.dim() == 1 && targets.size(0) == logits.size(0), "cross_entropy_mean: expected (N,) targets");
    TORCH_CHECK(logits.is_contiguous() && targets.is_contiguous(), "cross_entropy_mean: expected contiguous tensors");
    const c10::cuda::CUDAGuard guard(logits.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    const int64_t rows = logits.size(0);
    const int64_t C = logits.size(1);
    auto out = torch::empty({}, logits.options());
    auto row_loss = torch::empty({std::max<int64_t>(rows, 1)}, logits.options());
    const float* lp = logits.data_ptr<float>();
    const int64_t* tp = targets.data_ptr<int64_t>();
    if (rows > 0 && C > 0) {
        const int grid = static_cast<int>(std::min<int64_t>(rows, 1 << 30));
        const bool vec = C % 4 == 0 && reinterpret_cast<uintptr_t>(lp) % 16 == 0;
        if (vec) {
            ce_rows_kernel<true><<<grid, kThreads, 0, stream>>>(lp, tp, rows, C, ignore_index, row_loss.data_ptr<float>());
        } else {
            ce_rows_kernel<false><<<grid, kThreads, 0, stream>>>(lp, tp, rows, C, ignore_index, row_loss.data_ptr<float>());
        }
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    ce_mean_kernel<<<1, kFinalThreads, 0, stream>>>(row_loss.data_ptr<float>(), tp, C > 0 ? rows : 0, ignore_index,
                                                    out.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="kb_l1_31_cuda_cross_entropy",
    cpp_sources=_cpp_decl,
    cuda_sources=_cuda_source,
    functions=["cross_entropy_mean"],
    extra_cuda_cflags=["-O3"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, predictions, targets):
        return _ext.cross_entropy_mean(predictions.contiguous(), targets.contiguous(), -100)
