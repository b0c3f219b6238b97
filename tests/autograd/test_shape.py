"""Shape ops and indexing: forward vs NumPy, gradchecks, and error messages."""

import numpy as np
import pytest

import tinyattn as ta
from tests.helpers import check, leaf


def test_reshape_and_view(rng):
    x = leaf(rng, 2, 3, 4)
    np.testing.assert_array_equal(x.reshape(6, -1).array, x.array.reshape(6, 4))
    np.testing.assert_array_equal(x.view((4, 6)).array, x.array.reshape(4, 6))
    check(lambda t: t.reshape(4, 6), x)
    check(lambda t: t.transpose(0, 2).reshape(-1), x)  # non-contiguous input


def test_reshape_error_names_original_shape():
    with pytest.raises(ValueError, match=r"view: shape \(3, 5\) is invalid for input of shape \(2, 4\)"):
        ta.ones(2, 4).view(3, 5)


def test_transpose_permute_T(rng):
    x = leaf(rng, 2, 3, 4)
    np.testing.assert_array_equal(x.transpose(0, 2).array, np.swapaxes(x.array, 0, 2))
    np.testing.assert_array_equal(x.permute(2, 0, 1).array, np.transpose(x.array, (2, 0, 1)))
    check(lambda t: t.transpose(-1, 0), x)
    check(lambda t: t.permute(1, 2, 0), x)
    m = leaf(rng, 3, 5)
    np.testing.assert_array_equal(m.T.array, m.array.T)
    check(lambda t: t.T, m)


def test_permute_rejects_non_permutation():
    with pytest.raises(ValueError, match="not a permutation"):
        ta.ones(2, 3).permute(0, 0)


def test_unsqueeze_squeeze_flatten_expand(rng):
    x = leaf(rng, 3, 1, 4)
    assert x.unsqueeze(0).shape == (1, 3, 1, 4)
    assert x.unsqueeze(-1).shape == (3, 1, 4, 1)
    assert x.squeeze().shape == (3, 4)
    assert x.squeeze(1).shape == (3, 4)
    assert x.squeeze(0).shape == (3, 1, 4)
    assert x.flatten().shape == (12,)
    assert x.flatten(1).shape == (3, 4)
    assert x.expand(2, 3, 5, 4).shape == (2, 3, 5, 4)
    assert x.expand(-1, 6, -1).shape == (3, 6, 4)
    check(lambda t: t.unsqueeze(1), x)
    check(lambda t: t.squeeze(), x)
    check(lambda t: t.flatten(), x)
    check(lambda t: t.expand(2, 3, 5, 4), x)
    assert x.contiguous() is x


def test_expand_error():
    with pytest.raises(ValueError, match=r"expand: cannot expand shape \(3, 2\)"):
        ta.ones(3, 2).expand(3, 4)


INDEXES = [
    1,
    -1,
    slice(1, 3),
    (slice(None), 2),
    (Ellipsis, 1),
    (None, 0),
    np.array([0, 2, 0]),  # repeated: gradients must accumulate
    (np.array([0, 1]), np.array([2, 2])),
]


@pytest.mark.parametrize("index", INDEXES, ids=repr)
def test_getitem(rng, index):
    x = leaf(rng, 3, 4)
    np.testing.assert_array_equal(x[index].array, x.array[index])
    check(lambda t: t[index], x)


def test_getitem_bool_mask_and_tensor_index(rng):
    x = leaf(rng, 3, 4)
    mask = x.array > 0
    np.testing.assert_array_equal(x[ta.tensor(mask)].array, x.array[mask])
    check(lambda t: t[mask], x)
    idx = ta.tensor([2, 2, 1])
    np.testing.assert_array_equal(x[idx].array, x.array[[2, 2, 1]])


def test_getitem_repeated_index_accumulates():
    x = ta.tensor(np.zeros(3), requires_grad=True)
    x[np.array([0, 0, 2])].backward(np.array([1.0, 2.0, 5.0]))
    np.testing.assert_array_equal(x.grad, [3.0, 0.0, 5.0])


def test_cat_stack(rng):
    a, b = leaf(rng, 2, 3), leaf(rng, 2, 5)
    np.testing.assert_array_equal(ta.cat([a, b], dim=1).array, np.concatenate([a.array, b.array], 1))
    check(lambda a, b: ta.cat([a, b], dim=-1), a, b)
    c, d = leaf(rng, 2, 3), leaf(rng, 2, 3)
    np.testing.assert_array_equal(ta.stack([c, d], dim=1).array, np.stack([c.array, d.array], 1))
    check(lambda c, d: ta.stack([c, d], dim=1), c, d)


def test_cat_shape_error():
    with pytest.raises(ValueError, match=r"cat: tensor 1 has shape \(3, 3\)"):
        ta.cat([ta.ones(2, 3), ta.ones(3, 3)], dim=1)


def test_split_chunk(rng):
    x = leaf(rng, 5, 4)
    parts = x.split(2)
    assert [p.shape for p in parts] == [(2, 4), (2, 4), (1, 4)]
    parts = x.split([1, 3], dim=1)
    assert [p.shape for p in parts] == [(5, 1), (5, 3)]
    np.testing.assert_array_equal(parts[1].array, x.array[:, 1:])
    assert [p.shape for p in x.chunk(2)] == [(3, 4), (2, 4)]
    check(lambda t: t.chunk(2, dim=1)[1] * t.chunk(2, dim=1)[0], x)
    with pytest.raises(ValueError, match="do not sum"):
        x.split([1, 1], dim=1)


@pytest.mark.parametrize("shape", [(-2, 3), (2.0, 3), (-1, -1)])
def test_reshape_refuses_sizes_torch_refuses(shape):
    x = ta.ones(2, 3)
    with pytest.raises(ValueError, match=r"reshape: (invalid )?shape"):
        x.reshape(*shape)
    with pytest.raises(ValueError, match=r"view: (invalid )?shape"):
        x.view(shape)
