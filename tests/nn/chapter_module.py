"""The textbook chapter's (§8.4) MultiheadAttention, rewritten on tinyattn, with its slip kept behind a flag.

The chapter projects q = q_proj(query) and then splits heads with
``query.view(...)`` -- the raw input, not ``q`` -- so the projections are
computed and thrown away. ``slip=False`` is the corrected code.
"""

import math

from tinyattn import nn


class ChapterMHA(nn.Module):
    def __init__(self, embed_dim, num_heads, slip, dtype=None):
        super().__init__()
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.slip = slip
        self.q_proj = nn.Linear(embed_dim, embed_dim, dtype=dtype)
        self.k_proj = nn.Linear(embed_dim, embed_dim, dtype=dtype)
        self.v_proj = nn.Linear(embed_dim, embed_dim, dtype=dtype)
        self.out_proj = nn.Linear(embed_dim, embed_dim, dtype=dtype)

    def forward(self, query, key, value):
        B, L, _ = query.shape
        S = key.shape[1]
        q, k, v = self.q_proj(query), self.k_proj(key), self.v_proj(value)
        if self.slip:  # the chapter's code
            q = query.view(B, L, self.num_heads, self.head_dim)
            k = key.view(B, S, self.num_heads, self.head_dim)
            v = value.view(B, S, self.num_heads, self.head_dim)
        else:
            q = q.view(B, L, self.num_heads, self.head_dim)
            k = k.view(B, S, self.num_heads, self.head_dim)
            v = v.view(B, S, self.num_heads, self.head_dim)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        weights = (q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)).softmax(dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, L, self.embed_dim)
        return self.out_proj(out), weights

    def packed_state_dict(self):
        """The same weights under torch's MultiheadAttention names (in_proj = rows q, k, v)."""
        import numpy as np

        return {
            "in_proj_weight": np.concatenate(
                [self.q_proj.weight.array, self.k_proj.weight.array, self.v_proj.weight.array]
            ),
            "in_proj_bias": np.concatenate([self.q_proj.bias.array, self.k_proj.bias.array, self.v_proj.bias.array]),
            "out_proj.weight": self.out_proj.weight.array,
            "out_proj.bias": self.out_proj.bias.array,
        }
