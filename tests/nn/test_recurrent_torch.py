"""RNN, LSTM, GRU and their cells give torch's outputs, final states and gradients from the same weights.

Each case builds the torch layer, copies its weights into ours by name (so the parameter names and
shapes are checked too), runs the same float64 input through both and backpropagates the same random
upstream gradients into the output and the final states.
"""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

LAYERS = ["RNN", "LSTM", "GRU"]
OPTIONS = [
    {}, {"num_layers": 2}, {"batch_first": True}, {"bidirectional": True}, {"bias": False},
    {"num_layers": 2, "bidirectional": True, "batch_first": True},
]


def _pair(kind, **options):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(3, 4, **options).double()
    ours = getattr(ta.nn, kind)(3, 4, dtype=ta.float64, **options)
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    assert sorted(state) == sorted(ours.state_dict())
    ours.load_state_dict({k: ta.tensor(v) for k, v in state.items()})
    return ours, theirs


def _flat(out):
    return [o for item in out for o in (item if isinstance(item, tuple) else (item,))]


@pytest.mark.parametrize("kind", LAYERS)
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
@pytest.mark.parametrize("with_state", [False, True])
def test_layer_matches_torch(kind, options, with_state):
    ours, theirs = _pair(kind, **options)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 5, 3) if options.get("batch_first") else (5, 2, 3))
    d = (2 if options.get("bidirectional") else 1) * options.get("num_layers", 1)
    states = [rng.standard_normal((d, 2, 4)) for _ in range(2 if kind == "LSTM" else 1)]
    results = []
    for lib, layer in ((ta, ours), (torch, theirs)):
        xi = lib.tensor(x, requires_grad=True)
        hs = [lib.tensor(s, requires_grad=True) for s in states]
        hx = None if not with_state else (tuple(hs) if kind == "LSTM" else hs[0])
        outs = _flat(layer(xi, hx))
        loss = sum((o * lib.tensor(np.random.default_rng(i).standard_normal(tuple(o.shape)))).sum()
                   for i, o in enumerate(outs))
        loss.backward()
        leaves = [xi, *(hs if with_state else []), *layer.parameters()]
        results.append(([o.detach().numpy() for o in outs], [p.grad.numpy() for p in leaves]))
    for mine, other in zip(results[0][0] + results[0][1], results[1][0] + results[1][1]):
        assert mine.shape == other.shape
        np.testing.assert_allclose(mine, other, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", LAYERS)
def test_unbatched_input_as_torch(kind):
    ours, theirs = _pair(kind)
    x = np.random.default_rng(2).standard_normal((6, 3))
    mine, other = _flat(ours(ta.tensor(x))), _flat(theirs(torch.tensor(x)))
    for a, b in zip(mine, other):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10)


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("batched", [True, False])
def test_cell_matches_torch(kind, batched):
    ours, theirs = _pair(kind)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3) if batched else (3,))
    h = [rng.standard_normal((2, 4) if batched else (4,)) for _ in range(2 if kind == "LSTMCell" else 1)]
    results = []
    for lib, cell in ((ta, ours), (torch, theirs)):
        xi, hs = lib.tensor(x, requires_grad=True), [lib.tensor(a, requires_grad=True) for a in h]
        out = cell(xi, tuple(hs) if kind == "LSTMCell" else hs[0])
        outs = list(out) if isinstance(out, tuple) else [out]
        sum((o * (i + 1.5)).sum() for i, o in enumerate(outs)).backward()
        results.append([o.detach().numpy() for o in outs] + [t.grad.numpy() for t in [xi, *hs, *cell.parameters()]])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_relu_rnn_and_dropout_between_layers():
    ours, theirs = _pair("RNN", nonlinearity="relu")
    x = np.random.default_rng(4).standard_normal((4, 2, 3))
    np.testing.assert_allclose(ours(ta.tensor(x))[0].detach().numpy(), theirs(torch.tensor(x))[0].detach().numpy())
    layer = ta.nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    ta.manual_seed(0)
    a = layer(ta.randn(4, 2, 3))[0]
    layer.eval()
    b, c = layer(ta.ones(4, 2, 3))[0], layer(ta.ones(4, 2, 3))[0]
    np.testing.assert_array_equal(b.detach().numpy(), c.detach().numpy())  # eval: no dropout
    assert a.shape == (4, 2, 4)


def test_repr_as_torch():
    for kind, options in (("LSTM", {"num_layers": 2, "batch_first": True}), ("GRU", {"bidirectional": True})):
        ours, theirs = _pair(kind, **options)
        assert repr(ours) == repr(theirs)
    assert repr(ta.nn.LSTMCell(3, 4)) == repr(torch.nn.LSTMCell(3, 4))


@pytest.mark.parametrize("call, error, message", [
    (lambda nn: nn.LSTM(3, 4)(nn_tensor(nn, (5, 2, 7))), RuntimeError,
     "input.size\\(-1\\) must be equal to input_size"),
    (lambda nn: nn.GRU(3, 4)(nn_tensor(nn, (5, 2, 3)), nn_tensor(nn, (2, 2, 4))), RuntimeError,
     "Expected hidden size \\(1, 2, 4\\), got \\(2, 2, 4\\)"),
    (lambda nn: nn.RNN(3, 4, nonlinearity="gelu"), ValueError, "Unknown nonlinearity 'gelu'"),
    (lambda nn: nn.LSTM(3, 4, dropout=1.5), ValueError, "dropout should be a number in range \\[0, 1\\]"),
    (lambda nn: nn.RNN(3, 4)(nn_tensor(nn, (1, 5, 2, 3))), ValueError, "Expected input to be 2D or 3D, got 4D"),
])
def test_bad_input_is_refused_as_torch(call, error, message):
    with pytest.raises(error, match=message):
        call(ta.nn)
    with pytest.raises(error):
        call(torch.nn)


def nn_tensor(nn, shape):
    lib = ta if nn is ta.nn else torch
    return lib.zeros(shape)
