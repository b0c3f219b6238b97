"""nn.functional's smaller functions against torch where they are easy to get subtly wrong: the points where an
activation changes branch (0, softplus's threshold), in place or not, cropping pads, dtypes, vectors near zero
length, broadcasting, a negative padding_idx, one_hot. Values and gradients (from a random upstream) in float64."""

import warnings

import numpy as np
import pytest

import tinyattn as ta
from tests.helpers import assert_as_torch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

rng = np.random.default_rng(2026)


BRANCH_POINTS = np.array([-3.0, -0.5, 0.0, 0.0, 0.25, 2.0])  # (0 twice: where each activation switches branch)


@pytest.mark.parametrize("name, program", [
    ("elu", lambda lib, x: lib.nn.functional.elu(x, alpha=0.7)),
    ("elu_default", lambda lib, x: lib.nn.functional.elu(x)),
    ("leaky_relu", lambda lib, x: lib.nn.functional.leaky_relu(x, 0.2)),
    ("leaky_relu_default", lambda lib, x: lib.nn.functional.leaky_relu(x)),
])
def test_activations_at_their_branch_point_as_torch(name, program):
    """At exactly 0 the gradient is the negative branch's (torch's ``x > 0`` test)."""
    assert_as_torch(program, [BRANCH_POINTS])


def test_softplus_switches_to_the_identity_past_its_threshold_as_torch():
    """``beta * x > threshold`` is linear; at exactly the threshold it is still the log1p form (~2e-9 apart)."""
    x = np.array([-1.0, 0.5, 10.0, 19.999, 20.0, 20.5, 30.0])
    assert_as_torch(lambda lib, t: lib.nn.functional.softplus(t), [x], rtol=1e-15)
    assert_as_torch(lambda lib, t: lib.nn.functional.softplus(t, beta=2.0, threshold=10.0), [x / 2], rtol=1e-15)


@pytest.mark.parametrize("name", ["elu", "leaky_relu"])
def test_inplace_changes_the_input_only_when_asked(name):
    """``inplace=True`` (on a tensor outside any graph) writes the input and returns it; the default leaves it."""
    for lib in (ta, torch):
        fn = getattr(lib.nn.functional, name)
        x = lib.tensor(BRANCH_POINTS.copy())
        out = fn(x)
        np.testing.assert_array_equal(x.numpy(), BRANCH_POINTS)
        same = fn(x, inplace=True)
        assert same is x
        np.testing.assert_array_equal(x.numpy(), out.numpy())


@pytest.mark.parametrize("pad", [(1, 2), (-1, 0), (0, -2), (2, -1, -1, 1), (0, 0, 1, -2), (-2, 3, 1, 1, 0, 2)])
@pytest.mark.parametrize("value", [None, 1.5])
def test_pad_grows_and_crops_each_end_as_torch(pad, value):
    """Negative amounts crop, at whichever end they are given for; the value fills what grows."""
    x = rng.standard_normal((3, 4, 5))
    kwargs = {} if value is None else {"value": value}
    assert_as_torch(lambda lib, t: lib.nn.functional.pad(t, pad, **kwargs), [x])


def test_pad_keeps_a_float32_input_float32_as_torch():
    x = rng.standard_normal((2, 3)).astype(np.float32)
    assert_as_torch(lambda lib, t: lib.nn.functional.pad(t, (1, 1), value=0.1), [x], rtol=1e-6)


@pytest.mark.parametrize("which", ["softmax", "log_softmax"])
def test_softmax_dtype_casts_before_computing_as_torch(which):
    x = rng.standard_normal((2, 5)).astype(np.float32)
    dtype = assert_as_torch(lambda lib, t: getattr(lib.nn.functional, which)(t, 1, dtype=lib.float64), [x], rtol=1e-6)
    assert dtype == "float64"


@pytest.mark.parametrize("which", ["softmax", "log_softmax"])
def test_softmax_of_a_zero_d_tensor_without_dim_as_torch(which):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the implicit-dim warning: tested in test_more_layers_torch.py)
        assert_as_torch(lambda lib, t: getattr(lib.nn.functional, which)(t), [np.array(0.7)])


def test_normalize_of_short_vectors_and_at_exactly_eps_as_torch():
    """Shorter than eps: divided by eps; exactly eps long ([3, 4] with eps=5): the gradient flows through the
    norm, as torch's clamp_min lets it."""
    x = np.array([[3e-13, -4e-13, 1e-13], [0.3, 0.1, -0.2], [1e-3, 2e-3, 0.0]])
    assert_as_torch(lambda lib, t: lib.nn.functional.normalize(t), [x], atol=1e-12)
    assert_as_torch(lambda lib, t: lib.nn.functional.normalize(t, dim=0), [x], atol=1e-12)
    assert_as_torch(lambda lib, t: lib.nn.functional.normalize(t, eps=5.0), [np.array([[3.0, 4.0], [0.3, 0.4]])])


@pytest.mark.parametrize("a_shape, b_shape, dim", [((3, 4), (3, 4), 1), ((3, 4), (3, 4), 0), ((2, 1), (2, 3), 1),
                                                     ((1, 4), (3, 4), 1), ((2, 3, 4), (3, 4), -1)])
def test_cosine_similarity_normalizes_each_after_broadcasting_as_torch(a_shape, b_shape, dim):
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    assert_as_torch(lambda lib, s, t: lib.nn.functional.cosine_similarity(s, t, dim), [a, b], atol=1e-14)


def test_cosine_similarity_of_short_vectors_as_torch():
    """Each vector's norm is held at eps on its own (two short vectors still have a cosine), and passes its gradient
    on as if it were not, as in torch."""
    a = np.array([[1e-5, 0.0, 0.0], [3.0, 4.0, 0.0], [1e-9, 2e-9, 0.0]])
    b = np.array([[1e-5, 1e-5, 0.0], [1e-6, 0.0, 0.0], [1e-9, -1e-9, 1e-9]])
    # (gradients up to 2e7: atol for their cancellations)
    assert_as_torch(lambda lib, s, t: lib.nn.functional.cosine_similarity(s, t), [a, b], atol=1e-9)
    assert_as_torch(lambda lib, s, t: lib.nn.functional.cosine_similarity(s, t, eps=1e-3), [a, b], atol=1e-9)


@pytest.mark.parametrize("padding_idx", [1, -1, -4])
def test_embedding_with_a_padding_idx_counted_from_the_end_as_torch(padding_idx):
    """A negative padding_idx counts from the last row (of 5, not of the 3 columns)."""
    weight = rng.standard_normal((5, 3))
    idx = np.array([[0, 4, 1], [1, 3, 4]])
    results = []
    for lib in (ta, torch):
        w = lib.tensor(weight, requires_grad=True)
        out = lib.nn.functional.embedding(lib.tensor(idx), w, padding_idx=padding_idx)
        (g,) = lib.autograd.grad(out, w, lib.tensor(np.arange(18.0).reshape(2, 3, 3)))
        results.append((out.detach().numpy(), g.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("ids, num_classes", [([[0, 2], [1, 1]], -1), ([3, 0], 5), ([], 4), (4, -1)])
def test_one_hot_as_torch(ids, num_classes):
    ours = ta.nn.functional.one_hot(ta.tensor(ids, dtype=ta.long), num_classes)
    theirs = torch.nn.functional.one_hot(torch.tensor(ids, dtype=torch.long), num_classes)
    assert ours.dtype == np.int64 and ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("ids, num_classes, message", [
    ([0.0, 1.0], -1, "only applicable to index tensor"),
    ([-1, 0], 3, "Class values must be non-negative"),
    ([], -1, "Can not infer total number of classes from empty tensor"),
    ([0, 3], 3, "Class values must be smaller than num_classes"),
])
def test_one_hot_refuses_as_torch(ids, num_classes, message):
    for lib in (ta, torch):
        dtype = lib.float32 if isinstance(ids[0] if ids else 0, float) else lib.long
        with pytest.raises(RuntimeError, match=message):
            lib.nn.functional.one_hot(lib.tensor(ids, dtype=dtype), num_classes)
