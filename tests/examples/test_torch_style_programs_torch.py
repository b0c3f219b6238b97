"""Programs in the style of the PyTorch tutorials run on tinyattn with only their imports changed.

Each program below is written for torch (its first lines import ``torch``). The test runs the text
as it is with torch, then with the import lines replaced by ``import tinyattn as torch`` (and
``tinyattn.nn``...), and nothing else changed; it compares what each left in ``RESULT``: losses,
outputs, final weights and gradients. Both runs start from the same weights: the programs set them
from a NumPy generator, as code that loads pretrained weights does.
"""

import numpy as np
import pytest

torch_module = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

TORCH_IMPORTS = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
TINYATTN_IMPORTS = "import tinyattn as torch\nimport tinyattn.nn as nn\nimport tinyattn.nn.functional as F\n"

COMMON = '''
import math

import numpy as np


def init(model, seed=0, scale=0.3):
    """Every parameter from one NumPy generator (the same numbers in both libraries)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * scale, dtype=p.dtype))
'''

DEVICE_AGNOSTIC_TRAINING = '''
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
print(f"Using {device} device")


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


model = NeuralNetwork().to(device)
init(model)
rng = np.random.default_rng(1)
X = torch.tensor(rng.standard_normal((32, 4)), dtype=torch.float32, device=device)
y = torch.tensor(rng.integers(0, 3, 32), dtype=torch.long).to(device)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
losses = []
model.train()
for step in range(25):
    pred = model(X)
    loss = loss_fn(pred, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    if step % 10 == 0:
        print(f"loss: {loss:>7f}  [{step:>3d}/25]")
model.eval()
with torch.no_grad():
    pred = model(X)
    correct = (pred.argmax(1) == y).type(torch.float).sum().item()
RESULT = {"losses": losses, "correct": correct, "weights": [p.detach().cpu().numpy() for p in model.parameters()]}
'''

CAUSAL_SELF_ATTENTION = '''
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.n_embd = n_embd
        self.bias = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y), att


attn = CausalSelfAttention(n_embd=12, n_head=3, block_size=8)
init(attn)
x = torch.tensor(np.random.default_rng(2).standard_normal((2, 6, 12)), dtype=torch.float32, requires_grad=True)
y, att = attn(x)
upstream = torch.tensor(np.random.default_rng(3).standard_normal(tuple(y.shape)), dtype=torch.float32)
y.backward(upstream)
future = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
RESULT = {"y": y.detach().numpy(), "x.grad": np.asarray(x.grad), "att_future_max": att[..., future].max().item(),
          "grads": [np.asarray(p.grad) for p in attn.parameters()]}
'''

BIGRAM = '''
torch.manual_seed(1337)
vocab_size, block_size, batch_size = 11, 8, 4


class BigramLanguageModel(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx, targets=None):
        logits = self.token_embedding_table(idx)
        if targets is None:
            loss = None
        else:
            B, T, C = logits.shape
            logits = logits.view(B * T, C)
            targets = targets.view(B * T)
            loss = F.cross_entropy(logits, targets)
        return logits, loss

    def generate(self, idx, max_new_tokens):
        for _ in range(max_new_tokens):
            logits, loss = self(idx)
            logits = logits[:, -1, :]
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


data = torch.tensor([i % vocab_size for i in range(200)], dtype=torch.long)
starts = np.random.default_rng(4).integers(0, len(data) - block_size, (20, batch_size))
model = BigramLanguageModel(vocab_size)
init(model, scale=1.0)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
losses = []
for step in range(20):
    ix = torch.tensor(starts[step])
    xb = torch.stack([data[i:i + block_size] for i in ix])
    yb = torch.stack([data[i + 1:i + block_size + 1] for i in ix])
    logits, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
context = torch.zeros((1, 1), dtype=torch.long)
sample = model.generate(context, max_new_tokens=20)[0].tolist()
with torch.no_grad():
    probs = F.softmax(model(torch.arange(vocab_size).view(1, -1))[0], dim=-1)
RESULT = {"losses": losses, "sample_len": len(sample), "sample_in_vocab": all(0 <= t < vocab_size for t in sample),
          "probs": probs.numpy()}
'''

POLYNOMIAL_NN = '''
x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)
model = torch.nn.Sequential(torch.nn.Linear(3, 1))
init(model, scale=0.1)
loss_fn = torch.nn.MSELoss(reduction="sum")
learning_rate = 1e-6
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
losses = []
for t in range(200):
    y_pred = model(xx).squeeze(-1)
    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(t, loss.item())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
linear_layer = model[0]
RESULT = {"losses": losses, "bias": linear_layer.bias.item(), "weight": linear_layer.weight.detach().numpy()}
'''

PROGRAMS = {
    "device_agnostic_training": DEVICE_AGNOSTIC_TRAINING,
    "causal_self_attention": CAUSAL_SELF_ATTENTION,
    "bigram": BIGRAM,
    "polynomial_nn": POLYNOMIAL_NN,
}


def run(source):
    namespace = {"__name__": "__program__"}
    exec(compile(source, "<program>", "exec"), namespace)  # noqa: S102 (the programs above)
    return namespace["RESULT"]


def close(ours, theirs, path):
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys(), path
        for key in theirs:
            close(ours[key], theirs[key], f"{path}.{key}")
    elif isinstance(theirs, (list, tuple)) and theirs and not isinstance(theirs[0], (int, float)):
        assert len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            close(a, b, f"{path}[{i}]")
    elif isinstance(theirs, bool) or isinstance(theirs, int) and not isinstance(theirs, bool):
        assert ours == theirs, path
    else:
        a, b = np.asarray(ours), np.asarray(theirs)
        assert a.shape == b.shape and a.dtype.kind == b.dtype.kind, (path, a.shape, b.shape, a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=path)


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_runs_on_tinyattn_with_only_the_imports_changed(name, capsys):
    source = TORCH_IMPORTS + COMMON + PROGRAMS[name]
    ported = source.replace(TORCH_IMPORTS, TINYATTN_IMPORTS, 1)
    assert ported.count("tinyattn") == 3 and "tinyattn" not in ported.split(TINYATTN_IMPORTS, 1)[1]
    theirs = run(source)
    torch_output = capsys.readouterr().out
    ours = run(ported)
    assert capsys.readouterr().out == torch_output or name == "polynomial_nn"  # (printed losses: float digits)
    close(ours, theirs, name)
    if "losses" in theirs:
        assert theirs["losses"][-1] < theirs["losses"][0]  # the program trains (so the comparison means something)
