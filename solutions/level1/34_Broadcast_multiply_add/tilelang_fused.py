"""a * b + c (b a row, c a column) as one TileLang kernel: a is read once and the output written
once, where torch materializes a * b first. The work is pure bandwidth, so there is no shared
memory: 256 threads map a (32, 256) tile from global memory to registers through T.Parallel,
which TileLang lowers to 128-bit loads and stores when N is a multiple of 4 (scalar otherwise).
The kernel guards its bounds, so any M, N works (TileLang drops the guard where the tile divides
and indexes in 64 bits when M * N needs it). b and c go in flat, as (N,) and (M,); a or b is
copied only if its data is not 16-byte aligned, as the vector loads need. nvcc gets
--fmad=false so the multiply and the add round separately, as in torch: the result is bitwise
equal to the reference. One kernel per (M, N, dtype), kept on the module."""
import torch
import torch.nn as nn
import tilelang
import tilelang.language as T

BLOCK_M = 32
BLOCK_N = 256
THREADS = 256

_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


def _aligned(t):
    return t if t.data_ptr() % 16 == 0 else t.clone()


@tilelang.jit(compile_flags=["--fmad=false"])
def mul_row_add_col_program(M, N, dtype, block_M=BLOCK_M, block_N=BLOCK_N, threads=THREADS):
    @T.prim_func
    def mul_row_add_col(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((N,), dtype),
        C: T.Tensor((M,), dtype),
        Out: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                row = by * block_M + i
                col = bx * block_N + j
                if row < M and col < N:
                    Out[row, col] = A[row, col] * B[col] + C[row]

    return mul_row_add_col


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._kernels = {}

    def forward(self, a, b, c):
        M, N = a.shape
        assert b.numel() == N and c.numel() == M, "expects a (M, N), b (1, N), c (M, 1)"
        dtype = _DTYPES[a.dtype]
        a = _aligned(a.contiguous())
        b = _aligned(b.reshape(N).to(a.dtype).contiguous())
        c = c.reshape(M).to(a.dtype).contiguous()
        out = torch.empty_like(a)
        if out.numel() == 0:
            return out
        key = (M, N, dtype)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = mul_row_add_col_program(M, N, dtype)
            self._kernels[key] = kernel
        kernel(a, b, c, out)
        return out
