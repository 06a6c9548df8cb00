"""CUDA candidate: one fused kernel for y = relu(x @ W^T + b) / divisor, with the GEMM on
tensor cores in 3xTF32 ("split fp32") arithmetic.

Why: the fp32 reference GEMM already runs on cuBLAS at ~93% of the fp32 SIMT peak, so fusing
the epilogue alone gains nothing. Plain TF32 (10-bit mantissa) is ~8x faster on paper, but at
K = 8192 its error (~2e-4 abs) breaks the fp32 tolerance (atol = rtol = 1e-4). The CUTLASS
3xTF32 trick recovers fp32-level accuracy: split each operand v = hi + lo (hi = v cut to TF32,
lo = TF32 of the exact remainder) and accumulate a_lo*b_hi + a_hi*b_lo + a_hi*b_hi on the
tensor cores (a_lo*b_lo, ~2^-20 relative, is dropped). Three TF32 products still beat one fp32
SIMT product.

Tensor-core accumulation is not IEEE round-to-nearest (it truncates), and over K = 8192 that
bias adds up at the magnitude of the full sum. With FLUSH = True (default) the tensor cores
accumulate one 32-wide K-tile from zero and the partial is added to an fp32 register sum with a
round-to-nearest add, which keeps the bias at the magnitude of a 32-term partial.

Expected error (CPU emulation of this arithmetic on 128x128 and 256x256 blocks of this problem's
outputs, worst element, in units of the tolerance atol + rtol*|ref|): FLUSH = True 0.003-0.04
across models of the tensor-core rounding (round-to-nearest ... two's-complement truncation);
FLUSH = False 0.03 if the accumulation rounded to nearest, 0.3-0.7 with truncation, 2.3 (fails)
in the most pessimistic model; 1xTF32 1.6-1.8 (fails) in every model.

Kernel: block tile 128 x BN x BK = 32 with 8 warps (2 x 4), warp tile 64 x BN/4;
mma.sync.m16n8k8 tf32 via inline PTX; cp.async (16 B, L2 only) into a 3-stage shared-memory
ring with an XOR swizzle (conflict-free cp.async and ldmatrix); the hi/lo split in registers
after each ldmatrix; epilogue (+bias, ReLU, / divisor) fused on the accumulators.
FLUSH = True: BN = 128 (96 KiB smem). FLUSH = False: BN = 256 (144 KiB), or 128 if N % 256.
Fast path: fp32 CUDA tensors, M % 128 == 0, N % 128 == 0, K % 32 == 0, sm_80+ with enough
shared memory; anything else falls back to torch ops.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

_cpp_decl = r"""
#include <torch/extension.h>
torch::Tensor linear_relu_div_3xtf32(torch::Tensor x, torch::Tensor w, torch::Tensor b, double divisor, bool flush);
bool device_supported(int64_t device_index, bool flush);
"""

_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cmath>
#include <cstdint>

namespace {

constexpr int kBM = 128;        // block tile rows (M)
constexpr int kBK = 32;         // block tile depth (K): one 128-byte smem row = 8 chunks of 16 B
constexpr int kStages = 3;      // cp.async ring depth
constexpr int kWarpsM = 2;
constexpr int kWarpsN = 4;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;   // 256
constexpr int kWM = kBM / kWarpsM;                  // 64 rows per warp
constexpr int kMT = kWM / 16;                       // 4 m16 tiles per warp

// Shared tiles are [rows][32 floats]; the 16-byte chunk c of row r lives at chunk c ^ (r & 7),
// so 8 consecutive rows at the same logical chunk hit 8 distinct bank groups (ldmatrix and
// cp.async are both conflict-free).
__device__ __forceinline__ uint32_t swz(int row, int chunk) {
    return static_cast<uint32_t>((row * kBK + ((chunk ^ (row & 7)) << 2)) * 4);   // byte offset
}

__device__ __forceinline__ void cp_async16(uint32_t smem_addr, const void* gptr) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(smem_addr), "l"(gptr) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t smem_addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr) : "memory");
}

// v ~= hi + lo with hi, lo TF32, both truncated: hi = v with its low 13 mantissa bits cleared,
// lo = tf32(v - hi) (v - hi is exact in fp32). |v - hi - lo| < 2^-20 |v|, against 2^-22 |v| with
// cvt.rna for both; either is far below the fp32 accumulation error at K = 8192 (CPU emulation).
// Cost: 2 SASS instructions per value (ptxas drops the second mask: mma.sync ignores the low 13
// bits of a .tf32 operand), where cvt.rna.tf32.f32 is emulated on sm_90 with 4 (Inf test, add,
// select, mask), which made the kernel issue-bound. kRnaSplit = true restores cvt.rna.
constexpr bool kRnaSplit = false;
__device__ __forceinline__ void split_tf32(uint32_t v, uint32_t& hi, uint32_t& lo) {
    if (kRnaSplit) {
        asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(hi) : "f"(__uint_as_float(v)));
        asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(lo) : "f"(__uint_as_float(v) - __uint_as_float(hi)));
    } else {
        hi = v & 0xffffe000u;
        lo = __float_as_uint(__uint_as_float(v) - __uint_as_float(hi)) & 0xffffe000u;
    }
}

// c += a * b (m16n8k8, fp32 accumulate on the tensor core).
__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// c = a * b (zero accumulator in).
__device__ __forceinline__ void mma_tf32_zero_c(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};\n"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
}

// y[M,N] = epilogue(x[M,K] @ w[N,K]^T + b[N]); x, w row-major, so w is B in "col" layout.
// kFlush: the tensor cores accumulate one K-tile (32 products x 3) from zero, and that partial is
// added to an fp32 register sum with IEEE round-to-nearest adds. Tensor-core accumulation is not
// round-to-nearest (published measurements on V100/A100 found truncation), so accumulating all of
// K = 8192 in the MMA accumulator can let a rounding bias build up at the magnitude of the full
// sum; the flush keeps it at the magnitude of a 32-term partial. It costs a second set of
// accumulator registers, so it is only instantiated with BN = 128.
template <int BN, bool kFlush>
__global__ void __launch_bounds__(kThreads, 1)
gemm_relu_div_3xtf32_kernel(const float* __restrict__ x, const float* __restrict__ w,
                            const float* __restrict__ bias, float* __restrict__ y,
                            int M, int N, int K, float scale, float divisor, int use_mul) {
    constexpr int kWN = BN / kWarpsN;     // 64 or 32 columns per warp
    constexpr int kNT = kWN / 8;          // n8 tiles per warp (8 or 4)
    constexpr int kStageFloats = (kBM + BN) * kBK;
    constexpr int kAChunks = kBM * kBK / 4 / kThreads;   // 16-byte chunks per thread per stage
    constexpr int kBChunks = BN * kBK / 4 / kThreads;

    extern __shared__ __align__(128) float smem[];
    const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int warp_m = warp / kWarpsN;
    const int warp_n = warp % kWarpsN;
    const int m0 = blockIdx.x * kBM;      // x: consecutive blocks share one W tile (L2 reuse)
    const int n0 = blockIdx.y * BN;

    // cp.async roles: thread copies chunk (tid & 7) of rows (tid >> 3) + 32 i. All its rows share
    // (row & 7), so its swizzled smem offsets differ by compile-time multiples of 32 rows.
    constexpr int kRowsPerPass = kThreads / 8;                // 32
    const int ld_row = tid >> 3;
    const uint32_t ld_smem = swz(ld_row, tid & 7);
    const float* xg = x + static_cast<int64_t>(m0 + ld_row) * K + (tid & 7) * 4;
    const float* wg = w + static_cast<int64_t>(n0 + ld_row) * K + (tid & 7) * 4;
    const int64_t pass_stride = static_cast<int64_t>(kRowsPerPass) * K;

    auto load_stage = [&](int stage, int kt) {
        const uint32_t a_s = smem_base + stage * kStageFloats * 4 + ld_smem;
        const uint32_t b_s = a_s + kBM * kBK * 4;
        const float* xk = xg + kt * kBK;
        const float* wk = wg + kt * kBK;
#pragma unroll
        for (int i = 0; i < kAChunks; ++i)
            cp_async16(a_s + i * kRowsPerPass * kBK * 4, xk + i * pass_stride);
#pragma unroll
        for (int i = 0; i < kBChunks; ++i)
            cp_async16(b_s + i * kRowsPerPass * kBK * 4, wk + i * pass_stride);
    };

    float acc[kMT][kNT][4];                                   // tensor-core accumulator
    float sum[kFlush ? kMT : 1][kFlush ? kNT : 1][4];         // kFlush: fp32 running sum
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
        for (int j = 0; j < kNT; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                acc[i][j][r] = 0.0f;
                if constexpr (kFlush) sum[i][j][r] = 0.0f;
            }

    const int KT = K / kBK;
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
        if (s < KT) load_stage(s, s);
        cp_async_commit();
    }

    // ldmatrix lane roles: lane supplies the address of row (lane & 7) of 8x8 matrix (lane >> 3).
    const int lrow = lane & 7;
    const int lmat = lane >> 3;
    // A (m16 x k8): matrices {rows 0-7, 8-15} x {k 0-3, 4-7} -> regs a0..a3 of mma.m16n8k8.tf32.
    const int a_row = warp_m * kWM + lrow + (lmat & 1) * 8;
    const int a_chunk = lmat >> 1;
    // B (two n8 tiles x k8): matrices {tile j: k 0-3, k 4-7, tile j+1: k 0-3, k 4-7} -> b0,b1 of j, b0,b1 of j+1.
    const int b_row = warp_n * kWN + lrow + (lmat >> 1) * 8;
    const int b_chunk = lmat & 1;

    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait<kStages - 2>();
        __syncthreads();   // tile kt landed for everyone; stage (kt-1)%S is free to overwrite
        {
            const int next = kt + kStages - 1;
            if (next < KT) load_stage(next % kStages, next);
            cp_async_commit();
        }
        const int stage = kt % kStages;
        const uint32_t a_s = smem_base + stage * kStageFloats * 4;
        const uint32_t b_s = a_s + kBM * kBK * 4;

#pragma unroll
        for (int kk = 0; kk < kBK / 8; ++kk) {
            uint32_t a_hi[kMT][4], a_lo[kMT][4];
#pragma unroll
            for (int i = 0; i < kMT; ++i) {
                uint32_t raw[4];
                ldmatrix_x4(raw, a_s + swz(a_row + i * 16, 2 * kk + a_chunk));
#pragma unroll
                for (int r = 0; r < 4; ++r) split_tf32(raw[r], a_hi[i][r], a_lo[i][r]);
            }
#pragma unroll
            for (int jp = 0; jp < kNT / 2; ++jp) {
                uint32_t raw[4], b_hi[4], b_lo[4];
                ldmatrix_x4(raw, b_s + swz(b_row + jp * 16, 2 * kk + b_chunk));
#pragma unroll
                for (int r = 0; r < 4; ++r) split_tf32(raw[r], b_hi[r], b_lo[r]);
#pragma unroll
                for (int i = 0; i < kMT; ++i) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        float (&c)[4] = acc[i][2 * jp + h];
                        // small terms first, then the big one (CUTLASS order)
                        if (kFlush && kk == 0) mma_tf32_zero_c(c, a_lo[i], b_hi[2 * h], b_hi[2 * h + 1]);
                        else mma_tf32(c, a_lo[i], b_hi[2 * h], b_hi[2 * h + 1]);
                        mma_tf32(c, a_hi[i], b_lo[2 * h], b_lo[2 * h + 1]);
                        mma_tf32(c, a_hi[i], b_hi[2 * h], b_hi[2 * h + 1]);
                    }
                }
            }
        }
        if constexpr (kFlush) {
#pragma unroll
            for (int i = 0; i < kMT; ++i)
#pragma unroll
                for (int j = 0; j < kNT; ++j)
#pragma unroll
                    for (int r = 0; r < 4; ++r) sum[i][j][r] += acc[i][j][r];
        }
    }
    cp_async_wait<0>();

    // Epilogue. Accumulator layout of m16n8: c0,c1 -> (row g, cols 2t, 2t+1); c2,c3 -> row g+8.
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < kNT; ++j) {
        const int col = n0 + warp_n * kWN + j * 8 + 2 * t;
        const float2 bv = *reinterpret_cast<const float2*>(bias + col);
#pragma unroll
        for (int i = 0; i < kMT; ++i) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + warp_m * kWM + i * 16 + g + h * 8;
                float v0, v1;
                if constexpr (kFlush) { v0 = sum[i][j][2 * h]; v1 = sum[i][j][2 * h + 1]; }
                else { v0 = acc[i][j][2 * h]; v1 = acc[i][j][2 * h + 1]; }
                v0 += bv.x;
                v1 += bv.y;
                v0 = v0 < 0.0f ? 0.0f : v0;   // keeps NaN, like torch.relu
                v1 = v1 < 0.0f ? 0.0f : v1;
                if (use_mul) { v0 *= scale; v1 *= scale; }
                else { v0 /= divisor; v1 /= divisor; }
                *reinterpret_cast<float2*>(y + static_cast<int64_t>(row) * N + col) = make_float2(v0, v1);
            }
        }
    }
}

template <int BN>
constexpr int smem_bytes() { return kStages * (kBM + BN) * kBK * static_cast<int>(sizeof(float)); }

template <int BN, bool kFlush>
void launch(const float* x, const float* w, const float* b, float* y, int M, int N, int K,
            float scale, float divisor, int use_mul, cudaStream_t stream) {
    const int smem = smem_bytes<BN>();
    auto kernel = gemm_relu_div_3xtf32_kernel<BN, kFlush>;
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const dim3 grid(M / kBM, N / BN);
    kernel<<<grid, kThreads, smem, stream>>>(x, w, b, y, M, N, K, scale, divisor, use_mul);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

// mma.sync tf32 needs sm_80+; the kernels need 96 KiB (flush) or 144 KiB of shared memory per block.
bool device_supported(int64_t device_index, bool flush) {
    const int dev = static_cast<int>(device_index);
    int major = 0, optin = 0;
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return major >= 8 && optin >= (flush ? smem_bytes<128>() : smem_bytes<256>());
}

// relu(x @ w^T + b) / divisor for x [M,K], w [N,K], b [N]; all fp32, contiguous, on one GPU.
// flush = false: 128x256 tiles (128x128 when N % 256 != 0), whole-K tensor-core accumulation.
// flush = true:  128x128 tiles, per-K-tile partials added into an fp32 sum (see kFlush).
torch::Tensor linear_relu_div_3xtf32(torch::Tensor x, torch::Tensor w, torch::Tensor b, double divisor, bool flush) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "linear_relu_div_3xtf32: expected CUDA tensors");
    TORCH_CHECK(x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat,
                "linear_relu_div_3xtf32: expected float32 tensors");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && b.dim() == 1, "linear_relu_div_3xtf32: expected x [M,K], w [N,K], b [N]");
    TORCH_CHECK(x.is_contiguous() && w.is_contiguous() && b.is_contiguous(), "linear_relu_div_3xtf32: expected contiguous tensors");
    TORCH_CHECK(x.device() == w.device() && x.device() == b.device(), "linear_relu_div_3xtf32: tensors on different devices");
    const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
    TORCH_CHECK(w.size(1) == K && b.size(0) == N, "linear_relu_div_3xtf32: shape mismatch");
    TORCH_CHECK(M % kBM == 0 && N % 128 == 0 && K % kBK == 0 && M > 0 && N > 0 && K > 0,
                "linear_relu_div_3xtf32: needs M % 128 == 0, N % 128 == 0, K % 32 == 0");
    TORCH_CHECK(M <= INT32_MAX && N <= INT32_MAX && K <= INT32_MAX && N / 128 <= 65535,
                "linear_relu_div_3xtf32: problem too large");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0 && reinterpret_cast<uintptr_t>(w.data_ptr()) % 16 == 0 &&
                reinterpret_cast<uintptr_t>(b.data_ptr()) % 8 == 0, "linear_relu_div_3xtf32: misaligned tensors");

    const c10::cuda::CUDAGuard guard(x.device());
    auto y = torch::empty({M, N}, x.options());
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();

    // Multiply by 1/divisor only when that is exact (divisor a power of two); else divide.
    int exp2 = 0;
    const bool pow2 = std::isfinite(divisor) && divisor != 0.0 && std::fabs(std::frexp(divisor, &exp2)) == 0.5;
    const float fdiv = static_cast<float>(divisor);
    const float scale = pow2 ? static_cast<float>(1.0 / divisor) : 1.0f;
    const int use_mul = (pow2 && std::isnormal(scale) && static_cast<double>(fdiv) == divisor) ? 1 : 0;

    const float* xp = x.data_ptr<float>();
    const float* wp = w.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    if (flush) {
        launch<128, true>(xp, wp, bp, yp, int(M), int(N), int(K), scale, fdiv, use_mul, stream);
    } else if (N % 256 == 0) {
        launch<256, false>(xp, wp, bp, yp, int(M), int(N), int(K), scale, fdiv, use_mul, stream);
    } else {
        launch<128, false>(xp, wp, bp, yp, int(M), int(N), int(K), scale, fdiv, use_mul, stream);
    }
    return y;
}
"""

_ext = load_inline(
    name="kb_l2_63_cuda_3xtf32",
    cpp_sources=_cpp_decl,
    cuda_sources=_cuda_source,
    functions=["linear_relu_div_3xtf32", "device_supported"],
    extra_cuda_cflags=["-O3"],
    extra_cflags=["-O3"],
    verbose=False,
)


# True: K-tile partials flushed into fp32 round-to-nearest sums, 128x128 tiles (accurate whatever
# the tensor cores' rounding). False: whole-K accumulation in the tensor cores, 128x256 tiles
# (fewer instructions per MMA; its error depends on that rounding; see the module docstring).
FLUSH = True


_SUPPORTED = {}


def _device_ok(device):
    key = (device.index if device.index is not None else torch.cuda.current_device(), FLUSH)
    if key not in _SUPPORTED:
        _SUPPORTED[key] = bool(_ext.device_supported(key[0], FLUSH))
    return _SUPPORTED[key]


def _fast_path_ok(x, w, b):
    if b is None or not (x.is_cuda and w.is_cuda and b.is_cuda):
        return False
    if x.dtype != torch.float32 or w.dtype != torch.float32 or b.dtype != torch.float32:
        return False
    if x.dim() != 2 or w.dim() != 2 or b.dim() != 1 or x.device != w.device or x.device != b.device:
        return False
    M, K = x.shape
    N = w.shape[0]
    if w.shape[1] != K or b.shape[0] != N or M == 0 or M % 128 or N % 128 or K % 32:
        return False
    if max(M, N, K) >= 2**31 or N > 65535 * 128:
        return False
    return _device_ok(x.device)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, divisor):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x):
        w, b = self.linear.weight, self.linear.bias
        lead = x.shape[:-1]
        x2 = x.reshape(-1, x.shape[-1]) if x.dim() != 2 else x
        if _fast_path_ok(x2, w, b):
            x2, w, b = x2.contiguous(), w.contiguous(), b.contiguous()
            if x2.data_ptr() % 16 == 0 and w.data_ptr() % 16 == 0 and b.data_ptr() % 8 == 0:
                y = _ext.linear_relu_div_3xtf32(x2, w, b, float(self.divisor), FLUSH)
                return y.reshape(*lead, y.shape[-1])
        return torch.relu(F.linear(x, w, b)) / self.divisor
