"""0-d tensors keep their dtype through every op and its backward, with no torch needed.

NumPy 1.x promotes a 0-d float32 array combined with a Python number to float64
(value-based casting), so `1 - out * out` in a backward changes dtype there; torch and
NumPy 2 keep float32. tinyattn therefore needs NumPy >= 2 and says so at import. These
cases run in every environment CI tests, the oldest NumPy the package allows among them.
"""

import subprocess
import sys

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as nn
import tinyattn.nn.functional as F

# Each case: a function of one float32 tensor (0-d, or made 0-d by a reduction) to a tensor.
CASES = {
    "mean": lambda x: x.mean(),
    "mean of a vector": lambda x: (x * ta.ones(4)).mean(),
    "sum": lambda x: x.sum(),
    "var": lambda x: (x * ta.tensor([1.0, 2.0, 4.0])).var(),
    "std": lambda x: (x * ta.tensor([1.0, 2.0, 4.0])).std(),
    "var to 0-d with keepdim": lambda x: (x * ta.tensor([1.0, 2.0])).var(dim=0, keepdim=True),
    "amax": lambda x: (x * ta.tensor([1.0, 2.0])).amax(),
    "max": lambda x: (x * ta.tensor([1.0, 2.0])).max(),
    "relu": lambda x: x.relu(),
    "F.relu": lambda x: F.relu(x),
    "sigmoid": lambda x: x.sigmoid(),
    "tanh": lambda x: x.tanh(),
    "exp": lambda x: x.exp(),
    "log": lambda x: (x * x + 1).log(),
    "sqrt": lambda x: (x * x + 1).sqrt(),
    "abs": lambda x: x.abs(),
    "gelu": lambda x: F.gelu(x),
    "gelu tanh": lambda x: F.gelu(x, approximate="tanh"),
    "x + 1": lambda x: x + 1,
    "1 - x": lambda x: 1 - x,
    "x * 0.5": lambda x: x * 0.5,
    "2 / x": lambda x: 2 / (x * x + 1),
    "x / 3": lambda x: x / 3,
    "x ** 2": lambda x: x**2,
    "x ** 0.5": lambda x: (x * x + 1) ** 0.5,
    "2 ** x": lambda x: 2**x,
    "x ** x": lambda x: (x * x + 1) ** (x * x + 1),
    "neg": lambda x: -x,
    "x @ x": lambda x: (x * ta.ones(3)) @ (x * ta.ones(3)),
    "masked_fill": lambda x: x.masked_fill(ta.tensor(True), 0.0) + x.masked_fill(ta.tensor(False), 1.0),
    "where": lambda x: ta.where(ta.tensor(True), x, 0.0) + ta.where(ta.tensor(False), 1.0, x),
    "softmax": lambda x: x.softmax(dim=0),
    "log_softmax": lambda x: x.log_softmax(dim=0),
    "softmax of a vector": lambda x: (x * ta.tensor([1.0, 2.0])).softmax(dim=0)[0],
    "cat": lambda x: ta.cat([x.reshape(1), (x * 2).reshape(1)])[1],
    "stack": lambda x: ta.stack([x, x * 2])[1],
    "expand": lambda x: x.expand(3).sum(),
    "getitem": lambda x: x.reshape(1, 1)[0, 0],
    "mse_loss": lambda x: F.mse_loss(x, ta.tensor(0.5)),
    "mse_loss of a vector": lambda x: F.mse_loss(x * ta.ones(3), ta.zeros(3)),
    "cross_entropy": lambda x: F.cross_entropy((x * ta.tensor([1.0, 2.0])).reshape(1, 2), ta.tensor([1])),
    "layer_norm": lambda x: F.layer_norm(x * ta.tensor([1.0, 2.0, 4.0]), (3,)).sum(),
    "dropout": lambda x: F.dropout(x, 0.5),
    "Linear": lambda x: nn.Linear(3, 1)(x * ta.ones(3)).sum(),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_float32_0d_result_and_its_gradients_stay_float32(name):
    ta.manual_seed(0)
    x = ta.tensor(0.7, requires_grad=True)
    out = CASES[name](x)
    assert out.ndim == 0 or out.numel() == 1
    assert out.dtype == ta.float32, f"{name}: the output is {out.dtype}"
    upstream = np.asarray(np.random.default_rng(0).standard_normal(out.shape)).astype(np.float32)
    out.backward(upstream)
    assert x.grad.dtype == np.float32 and x.grad.shape == ()
    assert np.isfinite(x.grad)


def test_the_numpy_1x_backward_cases_of_the_support_matrix():
    """The reported cases, as a user runs them: each reaches backward with float32 gradients."""
    ta.manual_seed(0)
    x = ta.randn(8, 3, requires_grad=True)
    for loss in (x.mean(), x.var(), x.std(), F.mse_loss(x, ta.zeros(8, 3))):
        x.grad = None
        loss.backward()
        assert loss.dtype == ta.float32 and x.grad.dtype == np.float32
    mha = nn.MultiheadAttention(16, 2, batch_first=True)
    q = ta.randn(3, 5, 16, requires_grad=True)
    mha(q, q, q)[0].mean().backward()
    assert q.grad.dtype == np.float32
    assert all(p.grad.dtype == np.float32 for p in mha.parameters())


def test_numpy_1x_is_refused_at_import_with_the_reason():
    """Installed with --no-deps beside NumPy 1.x, tinyattn stops at import instead of computing in float64."""
    code = "import numpy; numpy.__version__ = '1.26.4'; import tinyattn.nn"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode != 0
    assert "ImportError: tinyattn needs NumPy >= 2.0 (found 1.26.4)" in run.stderr
