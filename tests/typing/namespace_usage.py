"""torch-style code that an IDE's type checker must read without an error (``.ci/run`` runs pyright on it).

Not a test module: nothing here runs under pytest. It is type-checked only, so every name must resolve
to what it is at runtime (``ta.tensor`` a function, not the ``autograd/tensor.py`` module).
"""

import tinyattn as ta
import tinyattn as torch
import tinyattn.nn as nn
import tinyattn.nn.functional as F
from tinyattn.nn.attention import SDPBackend, sdpa_kernel

x: ta.Tensor = ta.tensor([1.0, 2.0], dtype=ta.float32, requires_grad=True)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
y = torch.zeros(2, 3, dtype=torch.long, device=device)
w = torch.randn(3, 4, generator=torch.Generator().manual_seed(0)).to(device)
mask = torch.tril(torch.ones(4, 4)) == 0
scores = torch.einsum("ij,jk->ik", torch.randn(4, 3), w).masked_fill(mask, -torch.inf)
probs = torch.softmax(scores, dim=-1)
sample = torch.multinomial(probs, num_samples=1)
layer = nn.Linear(4, 2, device=device)
out = F.relu(layer(probs))
with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
    values, indices = torch.topk(out, 1)
print(f"{out.sum():.4f}", y.shape, sample.dtype, values.shape, indices.dtype, torch.cuda.device_count())
