"""a * b + c (b a row, c a column) as one CuTe DSL kernel: a is read once and the output written
once, where torch materializes a * b first.

Each CTA of 256 threads (8 x 32) owns a 32 x (32 * VEC) tile; each thread owns 4 rows x VEC
contiguous columns, VEC being one 128-bit vector (4 floats, 8 halves). b and c enter as stride-0
broadcast views of the output's shape, partitioned like a, so a thread loads one vector of b,
one vector of c (its 4 rows are contiguous in c) and 4 vectors of a, and stores 4 vectors: all
global traffic is 128-bit and coalesced (a warp covers 32 * 16 bytes of a row). Shapes are baked
into each compile (cached per shape, dtype and alignment), so a tile that divides the shape
needs no bounds checks; other shapes get per-vector predicates, and a row length or pointer that
rules out 128-bit access gets the same kernel with one element per vector. Half types are
computed in float32. The DSL indexes these static layouts with 32-bit offsets, so a tensor of
2**31 elements or more is launched in row chunks below that.
"""
import torch
import torch.nn as nn

import cutlass
import cutlass.cute as cute
import cuda.bindings.driver as cuda
from cutlass.cute.runtime import from_dlpack

_THREADS = (8, 32)
_ROWS_PER_THREAD = 4
_TILE_ROWS = _THREADS[0] * _ROWS_PER_THREAD
_MAX_ELEMS = 2**31 - 1
_SUPPORTED = (torch.float32, torch.float16, torch.bfloat16)


@cute.kernel
def bcast_fma_kernel(
    gA: cute.Tensor,
    gB: cute.Tensor,
    gC: cute.Tensor,
    gO: cute.Tensor,
    cO: cute.Tensor,
    shape: cute.Shape,
    thr_layout: cute.Layout,
    val_layout: cute.Layout,
    vec: cutlass.Constexpr,
    predicate: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    tile = ((None, None), bidx)
    dtype = gA.element_type

    vec_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=dtype.width * vec)
    elem_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype)
    thr_copy = cute.make_tiled_copy_tv(vec_atom, thr_layout, val_layout).get_slice(tidx)

    tA = thr_copy.partition_S(gA[tile])
    tB = thr_copy.partition_S(gB[tile])
    tC = thr_copy.partition_S(gC[tile])
    tO = thr_copy.partition_D(gO[tile])
    fA = cute.make_fragment_like(tA)
    fB = cute.make_fragment_like(tB)
    fC = cute.make_fragment_like(tC)
    fO = cute.make_fragment_like(tO)

    if cutlass.const_expr(predicate):
        tCrd = thr_copy.partition_S(cO[tile])
        in_vec = cute.make_rmem_tensor((_ROWS_PER_THREAD, 1, 1), cutlass.Boolean)
        for r in cutlass.range_constexpr(_ROWS_PER_THREAD):
            in_vec[r] = cute.elem_less(tCrd[r * vec], shape)
        cute.copy(vec_atom, tA, fA, pred=in_vec)
        cute.copy(vec_atom, tB, fB, pred=in_vec)
        cute.copy(elem_atom, tC, fC, pred=in_vec)
    else:
        cute.copy(vec_atom, tA, fA)
        cute.copy(vec_atom, tB, fB)
        cute.copy(elem_atom, tC, fC)

    a = fA.load().to(cutlass.Float32)
    b = fB.load().to(cutlass.Float32)
    c = fC.load().to(cutlass.Float32)
    fO.store((a * b + c).to(dtype))

    if cutlass.const_expr(predicate):
        cute.copy(vec_atom, fO, tO, pred=in_vec)
    else:
        cute.copy(vec_atom, fO, tO)


@cute.jit
def bcast_fma(
    mA: cute.Tensor,
    mB: cute.Tensor,
    mC: cute.Tensor,
    mO: cute.Tensor,
    stream: cuda.CUstream,
    vec: cutlass.Constexpr,
    predicate: cutlass.Constexpr,
):
    rows, cols = mA.shape
    row = cute.make_tensor(mB.iterator, cute.make_layout((rows, cols), stride=(0, 1)))
    col = cute.make_tensor(mC.iterator, cute.make_layout((rows, cols), stride=(1, 0)))

    thr_layout = cute.make_ordered_layout(_THREADS, order=(1, 0))
    val_layout = cute.make_ordered_layout((_ROWS_PER_THREAD, vec), order=(1, 0))
    tiler, tv_layout = cute.make_layout_tv(thr_layout, val_layout)

    gA = cute.zipped_divide(mA, tiler)
    gO = cute.zipped_divide(mO, tiler)
    cO = cute.zipped_divide(cute.make_identity_tensor(mO.shape), tiler)
    bcast_fma_kernel(
        gA,
        cute.zipped_divide(row, tiler),
        cute.zipped_divide(col, tiler),
        gO,
        cO,
        mO.shape,
        thr_layout,
        val_layout,
        vec,
        predicate,
    ).launch(
        grid=[cute.size(gO, mode=[1]), 1, 1],
        block=[cute.size(tv_layout, mode=[0]), 1, 1],
        stream=stream,
    )


def _align(t: torch.Tensor) -> int:
    return 16 if t.data_ptr() % 16 == 0 else t.element_size()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._compiled = {}

    def forward(self, a, b, c):
        if a.dtype not in _SUPPORTED:
            raise TypeError(f"cute_fused handles {_SUPPORTED}, not {a.dtype}")
        a = a.contiguous()
        rows, cols = a.shape
        b = b.to(a.dtype).expand(1, cols).contiguous().view(cols)
        c = c.to(a.dtype).expand(rows, 1).contiguous().view(rows)
        out = torch.empty_like(a)
        if out.numel() == 0:
            return out
        step = rows if rows * cols <= _MAX_ELEMS else max(1, _MAX_ELEMS // cols)
        if step < rows and step >= _TILE_ROWS:
            step -= step % _TILE_ROWS
        for r0 in range(0, rows, step):
            self._launch(a[r0:r0 + step], b, c[r0:r0 + step], out[r0:r0 + step])
        return out

    def _launch(self, a, b, c, out):
        rows, cols = a.shape
        aligns = tuple(_align(t) for t in (a, b, c, out))
        vec = 128 // (8 * a.element_size())
        if cols % vec or min(aligns[0], aligns[1], aligns[3]) < 16:
            vec = 1
        predicate = bool(rows % _TILE_ROWS or cols % (_THREADS[1] * vec))

        tensors = [from_dlpack(t, assumed_align=al) for t, al in zip((a, b, c, out), aligns)]
        stream = cuda.CUstream(torch.cuda.current_stream(a.device).cuda_stream)
        key = (rows, cols, a.dtype, aligns, vec, a.device.index)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = cute.compile(bcast_fma, *tensors, stream, vec, predicate)
            self._compiled[key] = compiled
        compiled(*tensors, stream)
