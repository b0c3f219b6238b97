"""Convolution, pooling and batch normalization give torch's values and gradients, module and function alike.

Each case copies torch's initial weights into ours by name, runs the same float64 input and
backpropagates the same random upstream gradient; ReLU'd inputs put ties (zeros) in the pooling
windows, where torch sends the gradient to the first largest element.
"""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

rng = np.random.default_rng(5)


def _compare(make, x, seed=0, steps=1):
    """Build the module with ``make(nn)`` in both libraries, copy torch's weights, compare outputs and grads."""
    torch.manual_seed(seed)
    theirs = make(torch.nn).double()
    ours = make(ta.nn).to(ta.float64)
    ours.load_state_dict({k: ta.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    for step in range(steps):
        xs = x if step == 0 else rng.standard_normal(x.shape)
        results = []
        for lib, layer in ((ta, ours), (torch, theirs)):
            xi = lib.tensor(xs, requires_grad=True)
            out = layer(xi)
            out.backward(lib.tensor(np.random.default_rng(step).standard_normal(tuple(out.shape))))
            results.append([out.detach().numpy(), xi.grad.numpy(), *(p.grad.numpy() for p in layer.parameters())])
        for a, b in zip(*results):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for (name, a), (_, b) in zip(sorted(ours.state_dict().items()), sorted(theirs.state_dict().items())):
        np.testing.assert_allclose(np.asarray(a.detach().numpy(), float), b.detach().numpy().astype(float),
                                   rtol=1e-10, err_msg=name)
    return ours, theirs


IMAGE = rng.standard_normal((2, 3, 9, 8))
SIGNAL = rng.standard_normal((2, 3, 11))

CONV2D = [
    {}, {"stride": 2}, {"padding": 1}, {"padding": (2, 0), "stride": (1, 2)}, {"dilation": 2}, {"bias": False},
    {"padding": "same"}, {"padding": "valid"},
]


@pytest.mark.parametrize("options", CONV2D, ids=str)
def test_conv2d_module_matches_torch(options):
    ours, theirs = _compare(lambda nn: nn.Conv2d(3, 4, 3, **options), IMAGE)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("options", [{}, {"stride": 2, "padding": 2}, {"dilation": 3}, {"padding": "same"}], ids=str)
def test_conv1d_module_matches_torch(options):
    ours, theirs = _compare(lambda nn: nn.Conv1d(3, 5, 3, **options), SIGNAL)
    assert repr(ours) == repr(theirs)


def test_rectangular_kernel_and_unbatched_input():
    _compare(lambda nn: nn.Conv2d(3, 2, (3, 2)), IMAGE[0])
    _compare(lambda nn: nn.Conv1d(3, 2, 1), SIGNAL[0])


POOLS = [
    ("MaxPool2d", {"kernel_size": 2}), ("MaxPool2d", {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("MaxPool2d", {"kernel_size": 2, "ceil_mode": True}), ("MaxPool2d", {"kernel_size": (3, 2), "dilation": 2}),
    ("MaxPool1d", {"kernel_size": 3}), ("MaxPool1d", {"kernel_size": 2, "stride": 1, "ceil_mode": True}),
    ("AvgPool2d", {"kernel_size": 2}), ("AvgPool2d", {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("AvgPool1d", {"kernel_size": 4, "stride": 3}),
]


@pytest.mark.parametrize("kind, options", POOLS, ids=str)
def test_pooling_matches_torch_with_ties(kind, options):
    x = np.maximum(IMAGE if kind.endswith("2d") else SIGNAL, 0)  # many zeros: ties in the windows
    ours, theirs = _compare(lambda nn: getattr(nn, kind)(**options), x)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("fn, args", [
    ("conv2d", (IMAGE, rng.standard_normal((4, 3, 2, 2)))), ("conv1d", (SIGNAL, rng.standard_normal((2, 3, 4)))),
    ("max_pool2d", (IMAGE, 2)), ("avg_pool2d", (IMAGE, (2, 3))), ("max_pool1d", (SIGNAL, 2)),
    ("avg_pool1d", (SIGNAL, 3)),
])
def test_functional_forms_match_torch(fn, args):
    results = []
    for lib in (ta, torch):
        tensors = [lib.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in args]
        out = getattr(lib.nn.functional, fn)(*tensors)
        out.backward(lib.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape))))
        results.append([out.detach().numpy()] + [t.grad.numpy() for t in tensors if hasattr(t, "grad")])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind, shape", [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)),
                                         ("BatchNorm2d", (2, 3, 4, 5))])
@pytest.mark.parametrize("options", [{}, {"momentum": None}, {"affine": False}, {"track_running_stats": False},
                                     {"momentum": 0.5, "eps": 1e-3}], ids=str)
def test_batchnorm_trains_and_evaluates_as_torch(kind, shape, options):
    ours, theirs = _compare(lambda nn: getattr(nn, kind)(3, **options), rng.standard_normal(shape), steps=3)
    assert repr(ours) == repr(theirs)
    ours.eval(), theirs.eval()
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(ours(ta.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-10, atol=1e-12)


def test_a_conv_net_trains_as_torch():
    def net(nn):
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(4 * 4 * 4, 3))

    x, y = rng.standard_normal((5, 1, 8, 8)), rng.integers(0, 3, 5)
    torch.manual_seed(0)
    theirs = net(torch.nn).double()
    ours = net(ta.nn).to(ta.float64)
    ours.load_state_dict({k: ta.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    losses = []
    for lib, model in ((ta, ours), (torch, theirs)):
        opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        run = []
        for _ in range(5):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(lib.tensor(x)), lib.tensor(y))
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-10)


@pytest.mark.parametrize("call, error, message", [
    (lambda lib: lib.nn.functional.conv2d(lib.zeros(1, 2, 5, 5), lib.zeros(3, 4, 2, 2)), RuntimeError, None),
    (lambda lib: lib.nn.Conv2d(3, 4, 3)(lib.zeros(1, 3, 2, 2)), RuntimeError, None),
    (lambda lib: lib.nn.Conv2d(3, 4, 3)(lib.zeros(3, 5)), RuntimeError, "Expected 3D \\(unbatched\\) or 4D"),
    (lambda lib: lib.nn.MaxPool2d(2, padding=2)(lib.zeros(1, 1, 6, 6)), RuntimeError,
     "pad should be at most half of effective kernel size"),
    (lambda lib: lib.nn.Conv2d(3, 4, 3, padding="full"), ValueError, "Invalid padding string 'full'"),
    (lambda lib: lib.nn.Conv2d(3, 4, 3, stride=2, padding="same"), ValueError, "padding='same' is not supported"),
    (lambda lib: lib.nn.BatchNorm1d(3)(lib.zeros(1, 3)), ValueError, "Expected more than 1 value per channel"),
    (lambda lib: lib.nn.BatchNorm2d(3)(lib.zeros(2, 3, 4)), ValueError, "expected 4D input \\(got 3D input\\)"),
])
def test_bad_input_is_refused_as_torch(call, error, message):
    with pytest.raises(error):
        call(torch)
    with pytest.raises(error, match=message):
        call(ta)


def test_what_is_not_implemented_says_so():
    with pytest.raises(NotImplementedError, match="groups=2 is not implemented in tinyattn"):
        ta.nn.Conv2d(4, 4, 3, groups=2)
    with pytest.raises(NotImplementedError, match="return_indices=True"):
        ta.nn.MaxPool2d(2, return_indices=True)(ta.zeros(1, 1, 4, 4))
    with pytest.raises(NotImplementedError, match="padding_mode='reflect'"):
        ta.nn.Conv1d(1, 1, 3, padding_mode="reflect")
