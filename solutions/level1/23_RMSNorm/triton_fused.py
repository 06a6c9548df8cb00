"""RMSNorm over channels in one Triton pass: each program holds all channels of a block of
spatial positions, so x is read once and written once (torch reads it three times)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_channels_kernel(x_ptr, w_ptr, out_ptr, C, HW, eps, BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr):
    b = tl.program_id(0)
    s = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    c = tl.arange(0, BLOCK_C)
    mask = (c[:, None] < C) & (s[None, :] < HW)
    offsets = b * C * HW + c[:, None] * HW + s[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / C + eps)
    w = tl.load(w_ptr + c, mask=c < C, other=0.0)
    tl.store(out_ptr + offsets, x / rms[None, :] * w[:, None], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_features))
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        B, C, H, W = x.shape
        out = torch.empty_like(x)
        block_s = 128
        grid = (B, triton.cdiv(H * W, block_s))
        rmsnorm_channels_kernel[grid](x, self.weight, out, C, H * W, self.eps,
                                      BLOCK_C=triton.next_power_of_2(C), BLOCK_S=block_s)
        return out
