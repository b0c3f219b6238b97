"""tensor_math.py's methods and their ``torch.X`` spellings give torch's values, dtypes, gradients and errors.

Each case runs the same call on tinyattn and on torch from the same random float64 inputs, then
backpropagates the same random upstream gradient through both (where the result has a gradient).
"""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.autograd import legacy

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

rng = np.random.default_rng(7)
A, B = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
V = rng.standard_normal(4)
SQ = rng.standard_normal((3, 3))
BATCH1, BATCH2 = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
IDX = np.array([[0, 2, 1, 0], [2, 1, 0, 2], [1, 0, 2, 1]])[:2]  # distinct rows per column: a scatter target
INDEX = np.array([2, 0])

# name: (inputs that require grad, the call; `lib` is tinyattn or torch, `t` their tensor maker)
CASES = {
    "add_alpha": ((A, B), lambda lib, t, x, y: x.add(y, alpha=2.5)),
    "sub_alpha": ((A, B), lambda lib, t, x, y: lib.subtract(x, y, alpha=-1.5)),
    "mul": ((A, B), lambda lib, t, x, y: x.mul(y)),
    "multiply": ((A, B), lambda lib, t, x, y: lib.multiply(x, y)),
    "div": ((A, B), lambda lib, t, x, y: x.div(y)),
    "true_divide": ((A, B), lambda lib, t, x, y: lib.true_divide(x, y)),
    "reciprocal": ((A,), lambda lib, t, x: x.reciprocal()),
    "maximum": ((A, B), lambda lib, t, x, y: lib.maximum(x, y)),
    "minimum": ((A, B), lambda lib, t, x, y: x.minimum(y)),
    "maximum_ties": ((A,), lambda lib, t, x: lib.maximum(x, x.detach())),
    "dot": ((V, V[::-1].copy()), lambda lib, t, x, y: x.dot(y)),
    "bmm": ((BATCH1, BATCH2), lambda lib, t, x, y: lib.bmm(x, y)),
    "mv": ((A, V), lambda lib, t, x, y: x.mv(y)),
    "matrix_power": ((SQ,), lambda lib, t, x: x.matrix_power(3)),
    "matrix_power_0": ((SQ,), lambda lib, t, x: x.matrix_power(0) + x),
    "cumsum_0": ((A,), lambda lib, t, x: x.cumsum(0)),
    "cumsum_last": ((A,), lambda lib, t, x: lib.cumsum(x, -1)),
    "diag_of_vector": ((V,), lambda lib, t, x: x.diag()),
    "diag_above": ((V,), lambda lib, t, x: lib.diag(x, 1)),
    "diag_below": ((V,), lambda lib, t, x: x.diag(-2)),
    "diag_of_matrix": ((A,), lambda lib, t, x: x.diag(1)),
    "index_select": ((A,), lambda lib, t, x: x.index_select(0, t(INDEX))),
    "index_select_1": ((A,), lambda lib, t, x: lib.index_select(x, 1, t(INDEX))),
    "index_fill": ((A,), lambda lib, t, x: x.index_fill(1, t(INDEX), -3.0)),
    "scatter_src": ((A, B[:2]), lambda lib, t, x, y: x.scatter(0, t(IDX), y)),
    "scatter_value": ((A,), lambda lib, t, x: lib.scatter(x, 1, t(IDX[:, :2]), 4.0)),
    "ravel": ((A,), lambda lib, t, x: x.t().ravel()),
    "swapdims": ((BATCH1,), lambda lib, t, x: x.swapdims(0, 2)),
    "broadcast_to": ((V,), lambda lib, t, x: x.broadcast_to((3, 4))),
}


def _run(lib, arrays, fn, upstream_seed):
    t = (lambda a: lib.tensor(a)) if lib is ta else (lambda a: torch.tensor(a))
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, t, *xs)
    g = np.random.default_rng(upstream_seed).standard_normal(tuple(out.shape))
    out.backward(lib.tensor(g))
    grads = [None if x.grad is None else np.asarray(x.grad.detach().numpy()) for x in xs]
    return out.detach().numpy(), grads


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_gradient_match_torch(name):
    arrays, fn = CASES[name]
    ours, our_grads = _run(ta, arrays, fn, 1)
    theirs, their_grads = _run(torch, arrays, fn, 1)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    for mine, other in zip(our_grads, their_grads):
        assert (mine is None) == (other is None)
        if mine is not None:
            np.testing.assert_allclose(mine, other, rtol=1e-12, atol=1e-12)


CONSTANTS = {  # results outside the graph: values and dtypes as torch
    "gt": lambda lib, x: x.gt(0.1), "ge": lambda lib, x: lib.ge(x, 0.1), "lt": lambda lib, x: lib.lt(x, 0.1),
    "le": lambda lib, x: x.le(0.1), "greater": lambda lib, x: lib.greater(x, x.flip(0)),
    "less_equal": lambda lib, x: lib.less_equal(x, 0.0), "not_equal": lambda lib, x: lib.not_equal(x, x.flip(1)),
    "floor": lambda lib, x: lib.floor(x * 3), "ceil": lambda lib, x: (x * 3).ceil(),
    "round": lambda lib, x: lib.round(x * 3), "round_decimals": lambda lib, x: (x * 3).round(decimals=1),
    "trunc": lambda lib, x: lib.trunc(x * 3), "sign": lambda lib, x: lib.sign(x),
    "unique": lambda lib, x: lib.unique((x * 2).long()),
    "argwhere": lambda lib, x: lib.argwhere(x > 0),
    "prod": lambda lib, x: lib.prod(x), "prod_dim": lambda lib, x: x.prod(1, keepdim=True),
    "prod_int": lambda lib, x: (x * 3).long().prod(0),
    "bitwise_xor": lambda lib, x: lib.bitwise_xor((x * 4).long(), (x * 9).long()),
    "bitwise_and": lambda lib, x: (x * 4).long().bitwise_and((x * 9).long()),
    "bitwise_or": lambda lib, x: lib.bitwise_or(x > 0, x > 0.5),
    "bitwise_not": lambda lib, x: lib.bitwise_not((x * 4).long()),
    "all": lambda lib, x: lib.all(x > -5), "any": lambda lib, x: lib.any(x > 5),
    "is_contiguous": lambda lib, x: lib.tensor(x.t().is_contiguous()),
    "is_contiguous_yes": lambda lib, x: lib.tensor(x.is_contiguous()),
    "div_floor": lambda lib, x: x.div(0.3, rounding_mode="floor"),
    "divide_trunc": lambda lib, x: lib.divide(x, 0.3, rounding_mode="trunc"),
}


@pytest.mark.parametrize("name", sorted(CONSTANTS))
def test_results_without_a_gradient_match_torch(name):
    fn = CONSTANTS[name]
    ours, theirs = fn(ta, ta.tensor(A)), fn(torch, torch.tensor(A))
    assert ours.dtype == theirs.numpy().dtype
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_unique_returns_inverse_and_counts_as_torch():
    x = rng.integers(0, 4, (3, 5))
    ours = ta.tensor(x).unique(return_inverse=True, return_counts=True)
    theirs = torch.tensor(x).unique(return_inverse=True, return_counts=True)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_in_place_forms_change_the_tensor_and_its_gradient_as_torch():
    def program(lib):
        w = lib.tensor(A, requires_grad=True)
        h = w * 2
        h.index_fill_(1, lib.tensor(INDEX), 0.5)
        h.scatter_(0, lib.tensor(IDX), lib.tensor(B[:2]))
        h.sum().backward()
        return h.detach().numpy(), w.grad.numpy()

    for mine, other in zip(program(ta), program(torch)):
        np.testing.assert_array_equal(mine, other)


def test_unsqueeze_and_squeeze_in_place_change_the_shape():
    x, y = ta.tensor(V), torch.tensor(V)
    assert x.unsqueeze_(0).shape == y.unsqueeze_(0).shape
    assert x.squeeze_().shape == y.squeeze_().shape
    with pytest.raises(RuntimeError, match="unsqueeze_: changing the shape of a tensor that is part of a graph"):
        (ta.tensor(V, requires_grad=True) * 2).unsqueeze_(0)


@pytest.mark.parametrize("call, message", [
    (lambda x: x.dot(x[:2]), r"dot: expected two 1-D tensors of the same size, got shapes \(4,\) and \(2,\)"),
    (lambda x: x.reshape(2, 2).bmm(x.reshape(2, 2)), r"bmm: expected two 3-D tensors"),
    (lambda x: x.reshape(2, 2).mv(x.reshape(2, 2)), r"mv: expected a 2-D and a 1-D tensor"),
    (lambda x: x.reshape(1, 4).matrix_power(2), r"matrix_power: expected a square matrix, got shape \(1, 4\)"),
    (lambda x: x.reshape(2, 2).matrix_power(-1), r"matrix_power: a negative power"),
    (lambda x: x.reshape(1, 1, 4).diag(), r"diag: expected a 1-D or 2-D tensor, got shape \(1, 1, 4\)"),
    (lambda x: x.index_select(0, ta.tensor([0.5])), r"index_select: expected a 1-D int index"),
    (lambda x: x.long().bitwise_xor(x), r"bitwise_xor: expected integer or bool tensors"),
    (lambda x: x.div(2, rounding_mode="up"), r"div: rounding_mode must be None, 'trunc' or 'floor'"),
])
def test_bad_input_gets_a_clear_error(call, message):
    with pytest.raises((RuntimeError, ValueError), match=message):
        call(ta.tensor(V))


def test_prod_refuses_inside_a_graph():
    with pytest.raises(RuntimeError, match="prod: its gradient is not implemented"):
        ta.tensor(V, requires_grad=True).prod()
    with ta.no_grad():
        assert float(ta.tensor(V, requires_grad=True).prod()) == pytest.approx(np.prod(V))


# -- the legacy names -------------------------------------------------------------------------------------


LEGACY_CALLS = [
    lambda lib: lib.Tensor([1, 2]), lambda lib: lib.Tensor(np.array([1, 2])),
    lambda lib: lib.Tensor(np.array([[1.5]])), lambda lib: lib.Tensor(2, 3), lambda lib: lib.Tensor(),
    lambda lib: lib.FloatTensor(3), lambda lib: lib.FloatTensor((2, 3)), lambda lib: lib.LongTensor([1.7, -2.2]),
    lambda lib: lib.LongTensor(np.array([1.7, 2])), lambda lib: lib.FloatTensor(np.array([[1, 2]])),
    lambda lib: lib.DoubleTensor([1, 2]), lambda lib: lib.ByteTensor([1, 2]), lambda lib: lib.BoolTensor([1, 0]),
    lambda lib: lib.IntTensor([3]), lambda lib: lib.HalfTensor([1]), lambda lib: lib.ones(2).type(lib.LongTensor),
    lambda lib: lib.ones(2).type("torch.LongTensor"), lambda lib: lib.Tensor([True]),
]


@pytest.mark.parametrize("i", range(len(LEGACY_CALLS)))
def test_legacy_constructors_give_torchs_dtype_shape_and_values(i):
    ours, theirs = LEGACY_CALLS[i](ta), LEGACY_CALLS[i](torch)
    assert ours.dtype == theirs.numpy().dtype and tuple(ours.shape) == tuple(theirs.shape)
    if i not in (3, 5):  # (torch leaves sized tensors uninitialized; ours are zeros)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_legacy_types_check_the_dtype_as_torch():
    for name in ("FloatTensor", "LongTensor", "DoubleTensor", "BoolTensor", "ByteTensor"):
        for values, dtype in (([1.5], "float32"), ([1], "int64"), ([1.5], "float64"), ([True], "bool")):
            ours, theirs = getattr(ta, name), getattr(torch, name)
            mine = ta.tensor(values, dtype=getattr(ta, dtype) if dtype != "bool" else ta.bool)
            other = torch.tensor(values, dtype=getattr(torch, dtype))
            assert isinstance(mine, ours) == isinstance(other, theirs), (name, dtype)
    assert ta.FloatTensor.dtype == ta.float32 and ta.ones(2).type() == torch.ones(2).type()
    for lib in (ta, torch):  # (a legacy type given to type() casts to its dtype)
        assert lib.ones(2).type(lib.DoubleTensor).dtype == lib.float64
    assert ta.LongTensor in legacy.LEGACY_TYPES


@pytest.mark.parametrize("call", [lambda lib: lib.FloatTensor(2.5), lambda lib: lib.FloatTensor([1], [2])])
def test_legacy_constructors_refuse_what_torch_refuses(call):
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(TypeError, match=r"FloatTensor\(\): expected sizes \(ints\) or one sequence of data"):
        call(ta)


def test_legacy_type_of_another_dtype_is_refused_as_torch():
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.ones(2, dtype=torch.long))
    with pytest.raises(TypeError, match="FloatTensor\\(\\): expected a tensor of dtype float32, got one of int64"):
        ta.FloatTensor(ta.ones(2, dtype=ta.long))


def test_tensor_of_a_tensor_shares_its_memory_as_torch():
    for lib in (ta, torch):
        x = lib.ones(3, dtype=lib.long)
        y = lib.Tensor(x)
        y[0] = 5
        assert int(x[0]) == 5 and y.dtype == x.dtype


def test_cuda_legacy_types_exist_and_refuse_to_make_a_tensor():
    for lib in (ta, torch):
        assert not isinstance(lib.ones(2), lib.cuda.FloatTensor)
        with pytest.raises(TypeError, match="not available"):
            lib.cuda.FloatTensor(2)
    with pytest.raises(TypeError, match="tinyattn computes on the CPU only"):
        ta.cuda.LongTensor([1, 2])


def test_variable_is_a_new_leaf_sharing_memory_as_torch():
    for lib in (ta, torch):
        from importlib import import_module

        Variable = import_module(f"{lib.__name__}.autograd").Variable
        a = lib.ones(2)
        v = Variable(a, requires_grad=True)
        assert v is not a and v.requires_grad and not a.requires_grad and isinstance(a, Variable)
        (v * 3).sum().backward()
        np.testing.assert_array_equal(v.grad.numpy(), [3.0, 3.0])
        with lib.no_grad():
            v[0] = 7
        assert float(a[0]) == 7
        with pytest.warns(UserWarning, match="volatile was removed"):
            Variable(a, volatile=True)
        with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
            Variable([1, 2])


def test_multinomial_as_a_method_draws_as_the_function():
    weights = ta.tensor([[0.0, 1.0, 3.0], [2.0, 5.0, 0.0]])
    ta.manual_seed(4)
    first = weights.multinomial(2)
    ta.manual_seed(4)
    np.testing.assert_array_equal(first.numpy(), ta.multinomial(weights, 2).numpy())
    theirs = torch.tensor(weights.numpy()).multinomial(2)
    assert first.dtype == theirs.numpy().dtype and tuple(first.shape) == tuple(theirs.shape)
    assert sorted(first[0].tolist()) == [1, 2] and sorted(first[1].tolist()) == [0, 1]  # (never a zero weight)


@pytest.mark.parametrize("name", ["abs_", "exp_", "log_", "sqrt_", "tanh_", "sigmoid_", "relu_", "neg_", "sin_",
                                  "cos_"])
def test_elementwise_in_place_as_torch_inside_the_graph_and_out(name):
    start = np.abs(A) + 0.5 if name in ("log_", "sqrt_") else A
    results = []
    for lib in (ta, torch):
        x = lib.tensor(start, requires_grad=True)
        y = x * 1.5
        getattr(y, name)()
        (y * lib.tensor(B)).sum().backward()
        plain = lib.tensor(start)
        getattr(plain, name)()
        results.append([y.detach().numpy(), x.grad.numpy(), plain.numpy()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        getattr(ta.tensor(start, requires_grad=True), name)()


@pytest.mark.parametrize("dim, keepdim", [(1, False), (0, True), (-1, True), ((0, 1), False)])
def test_logsumexp_as_torch_with_a_row_of_minus_infinity(dim, keepdim):
    x = A.copy()
    x[1] = -np.inf
    results = []
    for lib in (ta, torch):
        t = lib.tensor(x, requires_grad=True)
        out = lib.logsumexp(t, dim, keepdim=keepdim)
        out.backward(lib.tensor(np.random.default_rng(2).standard_normal(tuple(out.shape))))
        results.append([out.detach().numpy(), np.nan_to_num(t.grad.numpy())])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_module_half_casts_as_torch():
    for lib in (ta, torch):
        layer = lib.nn.Linear(2, 2).half()
        assert layer.weight.dtype == lib.float16
