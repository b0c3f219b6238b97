"""Matmul in all its NumPy forms, forward and backward, and its error message."""

import numpy as np
import pytest

import tinyattn as ta
from tests.helpers import check, leaf

CASES = [
    ((3, 4), (4, 5)),  # 2-D
    ((4,), (4,)),  # 1-D dot
    ((4,), (4, 5)),  # vector @ matrix
    ((3, 4), (4,)),  # matrix @ vector
    ((2, 3, 4), (4, 5)),  # batched @ 2-D
    ((2, 1, 3, 4), (5, 4, 2)),  # batch dims broadcast
    ((4,), (2, 4, 3)),  # vector @ batched
    ((2, 3, 4), (4,)),  # batched @ vector
]


@pytest.mark.parametrize("sa,sb", CASES)
def test_matmul_forward(rng, sa, sb):
    a, b = leaf(rng, *sa), leaf(rng, *sb)
    np.testing.assert_allclose((a @ b).array, a.array @ b.array)


@pytest.mark.parametrize("sa,sb", CASES)
def test_matmul_backward(rng, sa, sb):
    check(lambda a, b: a @ b, leaf(rng, *sa), leaf(rng, *sb))


def test_matmul_backward_transposed_inputs(rng):
    a, b = leaf(rng, 4, 3), leaf(rng, 5, 4)
    check(lambda a, b: a.T @ b.T, a, b)


def test_matmul_misaligned_message():
    with pytest.raises(ValueError, match=r"matmul: shapes \(3, 4\) and \(5, 6\) are not aligned \(4 != 5\)"):
        ta.ones(3, 4) @ ta.ones(5, 6)


def test_matmul_batch_mismatch_message():
    with pytest.raises(ValueError, match=r"\(2,\) and \(3,\)"):
        ta.ones(2, 3, 4) @ ta.ones(3, 4, 5)


@pytest.mark.parametrize("x_shape", [(4,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_op(rng, x_shape, bias):
    from tinyattn.autograd.core.ops.matmul import LinearFn

    x, w = leaf(rng, *x_shape), leaf(rng, 5, 4)
    b = leaf(rng, 5) if bias else None
    expected = x.array @ w.array.T + (b.array if bias else 0)
    np.testing.assert_allclose(LinearFn.apply(x, w, b).array, expected)
    if bias:
        check(lambda x, w, b: LinearFn.apply(x, w, b), x, w, b)
    else:
        check(lambda x, w: LinearFn.apply(x, w, None), x, w)
    check(lambda x, w: LinearFn.apply(x.transpose(0, -1) if x.ndim > 1 else x, w, None), leaf(rng, 4, 3), w)
