"""Pre-norm transformer encoder layer: x + MHA(LayerNorm(x)), then + MLP(LayerNorm(.)) with GELU; attention written out as matmul, softmax, matmul."""
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Pre-norm encoder layer: multi-head self-attention (no mask, no dropout) and a GELU feed-forward network."""

    def __init__(self, d_model, n_heads, d_ff, eps):
        super(Model, self).__init__()
        assert d_model % n_heads == 0
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(d_ff, d_model)

    def _split_heads(self, t):
        b, s, _ = t.shape
        return t.view(b, s, self.n_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm1(x)
        q = self._split_heads(self.q_proj(h))
        k = self._split_heads(self.k_proj(h))
        v = self._split_heads(self.v_proj(h))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        attn = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(attn, v)
        ctx = ctx.transpose(1, 2).reshape(b, s, d)
        x = x + self.out_proj(ctx)
        h = self.norm2(x)
        x = x + self.fc2(self.act(self.fc1(h)))
        return x


batch_size = 8
seq_len = 512
d_model = 512
n_heads = 8
d_ff = 2048
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, n_heads, d_ff, eps]
