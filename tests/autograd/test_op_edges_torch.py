"""Edges of the core ops and of Tensor against torch: an index of ints as a view, numpy's keyword names,
dtypes kept, 1-D operands of matmul with one side outside the graph, einsum's size-1 broadcasting and its
refusals, reductions with and without keepdim (a kept dim of size 1 included), setitem with a value of extra
leading 1s, gather and scatter's index bounds. Values and gradients from a random upstream, float64."""

import numpy as np
import pytest

import tinyattn as ta
from tests.helpers import assert_as_torch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

rng = np.random.default_rng(77)


def test_an_index_of_ints_is_a_view_of_one_element_as_torch():
    results = []
    for lib in (ta, torch):
        x = lib.tensor(np.arange(6.0).reshape(2, 3))
        x[1, 2].mul_(10.0)
        x[0, -1].add_(1.0)
        results.append(x.numpy())
    np.testing.assert_array_equal(*results)


def test_numpy_keyword_names_for_sum_and_mean():
    x = ta.tensor(np.arange(6.0).reshape(2, 3))
    assert x.sum(1, keepdims=True).shape == (2, 1)
    assert x.mean(axis=0, keepdims=True).tolist() == [[1.5, 2.5, 3.5]]
    assert x.sum(axis=1).tolist() == [3.0, 12.0]
    with pytest.raises(TypeError, match=r"sum\(\) got an unexpected keyword argument 'foo'"):
        x.sum(1, foo=True)


def test_erf_keeps_float32_as_torch():
    assert ta.erf(ta.ones(2, dtype=ta.float32)).dtype == ta.float32
    assert ta.erf(ta.ones(2, dtype=ta.float64)).dtype == ta.float64


def test_copy_refuses_a_source_that_does_not_broadcast():
    for lib in (ta, torch):
        with pytest.raises(RuntimeError):
            lib.zeros(2, 3).copy_(lib.ones(4))


@pytest.mark.parametrize("a_shape, b_shape", [((4,), (4, 3)), ((3, 4), (4,)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)),
                                              ((4,), (4,))])
@pytest.mark.parametrize("needs", [(True, False), (False, True), (True, True)])
def test_matmul_with_a_vector_on_either_side_and_either_outside_the_graph_as_torch(a_shape, b_shape, needs):
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    assert_as_torch(lambda lib, s, t: s @ t, [a, b], list(needs), atol=1e-14)


@pytest.mark.parametrize("equation, shapes", [
    ("ij,ij->ij", [(3, 4), (1, 4)]), ("ij,ij->ij", [(1, 4), (3, 4)]), ("ij,jk->ik", [(3, 1), (1, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (1, 4, 2)]),
])
def test_einsum_broadcasts_a_dim_of_size_one_as_torch(equation, shapes):
    arrays = [rng.standard_normal(s) for s in shapes]
    assert_as_torch(lambda lib, *xs: lib.einsum(equation, *xs), arrays, atol=1e-14)


@pytest.mark.parametrize("shapes", [[(3, 4), (2, 4)], [(2, 4), (3, 4)], [(2, 4), (5, 4)]])
def test_einsum_refuses_sizes_that_do_not_broadcast(shapes):
    with pytest.raises(ValueError, match="einsum: index 'i' has sizes"):
        ta.einsum("ij,ij->ij", *(ta.ones(*s) for s in shapes))


@pytest.mark.parametrize("which", ["amax", "var", "norm", "sum", "mean"])
@pytest.mark.parametrize("shape, dim", [((3, 4), 1), ((1, 4), 1), ((2, 1, 3), (0, 2)), ((3, 1), 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_with_and_without_keepdim_as_torch(which, shape, dim, keepdim):
    """A dim of size 1 that is not reduced stays (only the reduced dims are squeezed)."""
    x = rng.standard_normal(shape)
    if which == "norm":
        assert_as_torch(lambda lib, t: t.norm(dim=dim, keepdim=keepdim), [x], atol=1e-14)
    else:
        assert_as_torch(lambda lib, t: getattr(t, which)(dim, keepdim=keepdim), [x], atol=1e-14)


@pytest.mark.parametrize("index, value_shape", [(0, (1, 3)), ((slice(None), 1), (1, 2)), (1, (1, 1, 3))])
def test_setitem_with_a_value_of_extra_leading_ones_as_torch(index, value_shape):
    def program(lib, x, v):
        y = x * 1.0
        y[index] = v * v
        return y * x

    assert_as_torch(program, [rng.standard_normal((2, 3)), rng.standard_normal(value_shape)], atol=1e-14)


@pytest.mark.parametrize("bad", [-1, 3])
@pytest.mark.parametrize("op", ["gather", "scatter"])
def test_gather_and_scatter_refuse_an_index_out_of_bounds_as_torch(op, bad):
    for lib in (ta, torch):
        x, index = lib.zeros(2, 3), lib.tensor([[bad], [0]])
        args = (1, index) if op == "gather" else (1, index, 1.0)
        with pytest.raises(RuntimeError, match=f"index {bad} is out of bounds for dim"):
            getattr(x, op)(*args)


@pytest.mark.parametrize("a_shape, b_shape", [((), (3,)), ((3,), ()), ((), ())])
def test_matmul_refuses_a_zero_d_operand_on_either_side(a_shape, b_shape):
    with pytest.raises(ValueError, match=r"matmul: both operands need at least 1 dim"):
        ta.ones(a_shape) @ ta.ones(b_shape)
    with pytest.raises(RuntimeError, match="need to be at least 1D"):
        torch.ones(a_shape) @ torch.ones(b_shape)
