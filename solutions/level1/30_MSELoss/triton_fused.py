"""MSE loss as one Triton pass over both inputs: each program sums its block's squared
differences into its own slot, and the slots are added by torch (deterministic, unlike
atomics); torch's version writes and rereads two full-size temporaries."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def squared_error_partials_kernel(p_ptr, t_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    d = tl.load(p_ptr + offsets, mask=mask, other=0.0) - tl.load(t_ptr + offsets, mask=mask, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(d * d, axis=0))


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        p, t = predictions.contiguous(), targets.contiguous()
        n = p.numel()
        block = 4096
        partials = torch.empty(triton.cdiv(n, block), device=p.device, dtype=torch.float32)
        squared_error_partials_kernel[(partials.numel(),)](p, t, partials, n, BLOCK=block)
        return (partials.sum() / n).to(p.dtype)
