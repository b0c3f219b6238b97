"""Every namespace function, Tensor method and deterministic factory against torch's: the same call in
both libraries (``lib`` is ``tinyattn`` or ``torch``), outputs compared for value, dtype and shape,
then the same random upstream gradient backpropagated and every input's gradient compared.
"""

import math

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

R = np.random.default_rng(0)
X = R.standard_normal((3, 4))  # float64; ties are measure-zero
P = np.abs(R.standard_normal((3, 4))) + 0.5
V = R.standard_normal(4)
W = R.standard_normal(4)
B3 = R.standard_normal((2, 3, 4))
I = R.integers(-3, 4, (3, 4))  # noqa: E741
M = R.random((3, 4)) > 0.5
N = R.random((3, 4)) > 0.5
T = R.integers(0, 3, 200)  # many ties: a stable sort's order is defined, an unstable one's is not
L = R.standard_normal(20)
NAN = np.array([math.nan, 1.0, 2.0])

# name: (inputs, call). Float inputs require grad; ``call(lib, *tensors)`` returns a tensor, a tuple, or a value.
CASES = {
    # the namespace's one-line aliases of methods
    "exp": ([X], lambda lib, x: lib.exp(x)),
    "log": ([P], lambda lib, x: lib.log(x)),
    "sqrt": ([P], lambda lib, x: lib.sqrt(x)),
    "tanh": ([X], lambda lib, x: lib.tanh(x)),
    "sigmoid": ([X], lambda lib, x: lib.sigmoid(x)),
    "relu": ([X], lambda lib, x: lib.relu(x)),
    "abs": ([X], lambda lib, x: lib.abs(x)),
    "neg": ([X], lambda lib, x: lib.neg(x)),
    "sin": ([X], lambda lib, x: lib.sin(x)),
    "cos": ([X], lambda lib, x: lib.cos(x)),
    "sin_int": ([I], lambda lib, x: lib.sin(x)),
    "square": ([X], lambda lib, x: lib.square(x)),
    "pow": ([P], lambda lib, x: lib.pow(x, 1.5)),
    "pow_scalar_base": ([X], lambda lib, x: lib.pow(2.0, x)),
    "add_alpha": ([X, P], lambda lib, a, b: lib.add(a, b, alpha=2.5)),
    "sub_alpha": ([X, P], lambda lib, a, b: lib.sub(a, b, alpha=-0.5)),
    "add": ([X, P], lambda lib, a, b: lib.add(a, b)),
    "sub": ([X, P], lambda lib, a, b: lib.sub(a, b)),
    "mul": ([X, P], lambda lib, a, b: lib.mul(a, b)),
    "div": ([X, P], lambda lib, a, b: lib.div(a, b)),
    "div_floor": ([X, P], lambda lib, a, b: lib.div(a.detach(), b.detach(), rounding_mode="floor")),
    "div_trunc": ([X, P], lambda lib, a, b: lib.div(a.detach(), b.detach(), rounding_mode="trunc")),
    "div_int_floor": ([I], lambda lib, a: lib.div(a, 2, rounding_mode="floor")),
    "div_int_trunc": ([I], lambda lib, a: lib.div(a, 2, rounding_mode="trunc")),
    "clamp": ([X], lambda lib, x: lib.clamp(x, -0.3, 0.4)),
    "clamp_max": ([X], lambda lib, x: lib.clamp(x, max=0.1)),
    "clamp_int_float_bound": ([I], lambda lib, x: lib.clamp(x, min=0.5)),
    "clamp_tensor_bound": ([X], lambda lib, x: x.clamp(min=lib.tensor(-0.2, dtype=lib.float64))),
    "clip": ([X], lambda lib, x: lib.clip(x, -0.3, 0.4)),
    "clip_method": ([X], lambda lib, x: x.clip(max=0.2)),
    "masked_fill": ([X], lambda lib, x: lib.masked_fill(x, lib.tensor(M), -1.5)),
    "clone": ([X], lambda lib, x: lib.clone(x) * 3),
    "tril": ([B3], lambda lib, x: lib.tril(x, 1)),
    "triu": ([X], lambda lib, x: lib.triu(x, -1)),
    "tril_method": ([X], lambda lib, x: x.tril()),
    "triu_method": ([X], lambda lib, x: x.triu(2)),
    # products
    "matmul": ([X, B3], lambda lib, a, b: lib.matmul(a, b.transpose(1, 2))),
    "mm": ([X, X], lambda lib, a, b: lib.mm(a, b.t())),
    "bmm": ([B3, B3], lambda lib, a, b: lib.bmm(a, b.transpose(1, 2))),
    "dot": ([V, W], lambda lib, a, b: lib.dot(a, b)),
    "outer": ([V, W], lambda lib, a, b: lib.outer(a, b)),
    "einsum_attention": ([B3, B3], lambda lib, q, k: lib.einsum("bik,bjk->bij", q, k)),
    "einsum_list": ([X, V], lambda lib, a, v: lib.einsum("ij,j->i", [a, v])),
    "einsum_implicit": ([X, X], lambda lib, a, b: lib.einsum("ij,kj", a, b)),
    "einsum_trace_free_sum": ([X], lambda lib, a: lib.einsum("ij->", a)),
    "einsum_constant_first": ([X.T.copy()], lambda lib, b: lib.einsum("ij,jk->ik", lib.tensor(X), b)),
    "einsum_ellipsis_of_no_dims": ([X], lambda lib, a: lib.einsum("...ij->ij", a)),
    "einsum_ellipsis_on_one_operand": ([B3, X.T.copy()], lambda lib, a, b: lib.einsum("...ij,...jk->...ik", a, b)),
    # reductions
    "sum": ([B3], lambda lib, x: lib.sum(x, 1)),
    "sum_keepdim": ([B3], lambda lib, x: lib.sum(x, (0, 2), keepdim=True)),
    "sum_dtype": ([I], lambda lib, x: lib.sum(x, dtype=lib.float64)),
    "mean": ([B3], lambda lib, x: lib.mean(x, -1)),
    "mean_all": ([B3], lambda lib, x: lib.mean(x)),
    "amax": ([X], lambda lib, x: lib.amax(x, 0)),
    "amin": ([X], lambda lib, x: lib.amin(x, 1, keepdim=True)),
    "max_all": ([X], lambda lib, x: lib.max(x)),
    "max_dim": ([X], lambda lib, x: lib.max(x, 1)),
    "min_dim": ([X], lambda lib, x: lib.min(x, 0, keepdim=True)),
    "min_all": ([X], lambda lib, x: lib.min(x)),
    "var": ([B3], lambda lib, x: lib.var(x, 1)),
    "var_correction": ([B3], lambda lib, x: lib.var(x, (0, 2), correction=0, keepdim=True)),
    "std": ([B3], lambda lib, x: lib.std(x, -1, correction=2)),
    "norm": ([X], lambda lib, x: lib.norm(x)),
    "norm_dim": ([B3], lambda lib, x: lib.norm(x, dim=-1, keepdim=True)),
    "norm_p1": ([X], lambda lib, x: lib.norm(x, p=1, dim=0)),
    "norm_inf": ([X], lambda lib, x: lib.norm(x, p=math.inf, dim=1)),
    "norm_neg_inf": ([X], lambda lib, x: lib.norm(x, p=-math.inf, dim=1)),
    "norm_p0": ([X], lambda lib, x: lib.norm(x.detach(), p=0, dim=1)),
    "norm_p3": ([X], lambda lib, x: x.norm(3, 1)),
    "norm_dtype": ([X], lambda lib, x: x.float().norm(dtype=lib.float64)),
    "norm_p0_keepdim": ([X], lambda lib, x: lib.norm(x.detach(), p=0, dim=0, keepdim=True)),
    "norm_neg_inf_keepdim": ([X], lambda lib, x: x.norm(-math.inf, 0, True)),
    "norm_inf_keepdim": ([X], lambda lib, x: x.norm(math.inf, 1, True)),
    "norm_p1_keepdim": ([X], lambda lib, x: x.norm(1, 1, True)),
    "norm_p3_keepdim": ([B3], lambda lib, x: x.norm(3, -1, True)),
    "all_any": ([M], lambda lib, m: (m.all(), m.any(), m.all(1), m.any(0, keepdim=True), m.all(dim=0, keepdim=True),
                                     lib.tensor(True).all(), lib.tensor(False).any())),
    "all_any_float": ([X], lambda lib, x: (x.detach().relu().all(1), x.detach().relu().any(1))),
    "sort_0d": ([], lambda lib: tuple(lib.tensor(2.5).sort())),
    "topk_0d": ([], lambda lib: tuple(lib.tensor(2.5).topk(1))),
    "argmax": ([X], lambda lib, x: lib.argmax(x)),
    "argmax_dim": ([X], lambda lib, x: lib.argmax(x, 1)),
    "argmax_keepdim": ([X], lambda lib, x: x.argmax(0, keepdim=True)),
    "argmin": ([X], lambda lib, x: lib.argmin(x)),
    "argmin_dim": ([X], lambda lib, x: lib.argmin(x, dim=0)),
    "argmin_keepdim": ([X], lambda lib, x: x.argmin(1, True)),
    "sort": ([X], lambda lib, x: tuple(lib.sort(x))),
    "sort_descending": ([X], lambda lib, x: tuple(lib.sort(x, 0, descending=True))),
    "sort_method": ([B3], lambda lib, x: tuple(x.sort(dim=1, stable=True))),
    "argsort": ([X], lambda lib, x: lib.argsort(x, 1, descending=True)),
    "argsort_method": ([X], lambda lib, x: x.argsort(0)),
    "topk": ([X], lambda lib, x: tuple(lib.topk(x, 2))),
    "topk_dim_smallest": ([X], lambda lib, x: tuple(lib.topk(x, 2, dim=0, largest=False))),
    "topk_values": ([B3], lambda lib, x: x.topk(3, 2).values),
    "gather": ([X], lambda lib, x: lib.gather(x, 1, lib.tensor([[0, 0], [3, 1], [2, 2]]))),
    "gather_dim0": ([X], lambda lib, x: x.gather(0, lib.tensor([[2, 0, 1, 1]]))),
    # comparisons and logic
    "allclose": ([X], lambda lib, x: lib.allclose(x, x + 1e-9)),
    "allclose_not": ([X], lambda lib, x: lib.allclose(x, x + 1e-3)),
    "allclose_tols": ([X], lambda lib, x: lib.allclose(x, x * 1.01, rtol=0.02, atol=0.0)),
    "allclose_nan": ([], lambda lib: lib.allclose(lib.tensor([math.nan]), lib.tensor([math.nan]), equal_nan=True)),
    "isclose": ([X], lambda lib, x: lib.isclose(x, x + lib.tensor(M) * 1e-3)),
    "isclose_tols": ([X], lambda lib, x: lib.isclose(x, x * 1.001, 1e-2, 0.0)),
    "isclose_method": ([X], lambda lib, x: x.isclose(x + 1e-6, atol=1e-5)),
    "equal": ([X], lambda lib, x: lib.equal(x, x.clone())),
    "equal_not": ([X], lambda lib, x: lib.equal(x, x + 1)),
    "logical_not": ([M], lambda lib, m: lib.logical_not(m)),
    "logical_not_float": ([X], lambda lib, x: lib.logical_not(x.detach().relu())),
    "logical_and": ([M, N], lambda lib, m, n: lib.logical_and(m, n)),
    "logical_or": ([M, N], lambda lib, m, n: lib.logical_or(m, n)),
    "logical_xor": ([M, N], lambda lib, m, n: lib.logical_xor(m, n)),
    "logical_methods": ([M, N], lambda lib, m, n: m.logical_and(n).logical_or(m).logical_xor(n)),
    "bitwise_ops": ([M, N], lambda lib, m, n: (~m & n) | (m ^ n)),
    "bitwise_ints": ([I], lambda lib, i: (i & 3) | (i ^ 1)),
    "bitwise_reflected": ([M], lambda lib, m: (True & m, False | m, True ^ m)),
    # shapes
    "reshape": ([X], lambda lib, x: lib.reshape(x, (2, 6))),
    "flatten": ([B3], lambda lib, x: lib.flatten(x, 1)),
    "transpose": ([B3], lambda lib, x: lib.transpose(x, 0, 2)),
    "t": ([X], lambda lib, x: lib.t(x)),
    "t_1d": ([V], lambda lib, x: x.t()),
    "mT": ([B3], lambda lib, x: x.mT),
    "permute": ([B3], lambda lib, x: lib.permute(x, (2, 0, 1))),
    "movedim": ([B3], lambda lib, x: (lib.movedim(x, 0, -1), lib.movedim(x, -1, 1), x.movedim((0, 1), (2, 0)),
                                      x.movedim(1, 1), x.movedim([2], [0]))),
    "unsqueeze": ([X], lambda lib, x: lib.unsqueeze(x, 1)),
    "squeeze": ([X], lambda lib, x: lib.squeeze(x.reshape(3, 1, 4))),
    "squeeze_dim": ([X], lambda lib, x: lib.squeeze(x.reshape(1, 3, 4), 0)),
    "flip": ([B3], lambda lib, x: lib.flip(x, (0, -1))),
    "flip_method_spread": ([B3], lambda lib, x: x.flip(1)),
    "unbind": ([B3], lambda lib, x: lib.unbind(x, 1)),
    "unbind_default": ([X], lambda lib, x: x.unbind()),
    "repeat": ([X], lambda lib, x: x.repeat(2, 1, 3)),
    "repeat_tuple": ([X], lambda lib, x: x.repeat((1, 2))),
    "repeat_interleave": ([X], lambda lib, x: lib.repeat_interleave(x, 2)),
    "repeat_interleave_dim": ([X], lambda lib, x: lib.repeat_interleave(x, lib.tensor([2, 0, 1]), dim=0)),
    "view_as": ([X], lambda lib, x: x.view_as(lib.zeros(4, 3))),
    "reshape_as": ([X], lambda lib, x: x.reshape_as(lib.zeros(2, 6))),
    "expand_as": ([V], lambda lib, x: x.expand_as(lib.zeros(3, 4))),
    "softmax": ([X], lambda lib, x: lib.softmax(x, 1)),
    "softmax_dtype": ([X], lambda lib, x: lib.softmax(x, -1, dtype=lib.float32)),
    "log_softmax": ([X], lambda lib, x: lib.log_softmax(x, 0)),
    "log_softmax_dtype": ([X], lambda lib, x: lib.log_softmax(x, 0, dtype=lib.float32)),
    "cat": ([X, X], lambda lib, a, b: lib.cat([a, b * 2], 1)),
    "stack": ([X, X], lambda lib, a, b: lib.stack([a, b * 2], -1)),
    "split": ([X], lambda lib, x: lib.split(x, [1, 3], 1)),
    "chunk": ([X], lambda lib, x: lib.chunk(x, 2, 1)),
    "where": ([X, P], lambda lib, a, b: lib.where(lib.tensor(M), a, b)),
    "numel": ([B3], lambda lib, x: lib.numel(x)),
    "is_tensor": ([X], lambda lib, x: (lib.is_tensor(x), lib.is_tensor(1.0), lib.is_tensor(np.ones(2)))),
    "is_floating_point": ([X, I], lambda lib, x, i: (lib.is_floating_point(x), lib.is_floating_point(i))),
    # conversions and sizes
    "conversions": ([X], lambda lib, x: (x.half(), x.int(), x.short(), x.byte().shape, x.long(), x.bool())),
    "type_as": ([X, I], lambda lib, x, i: i.type_as(x) * x),
    "type_names": ([X, I, M], lambda lib, x, i, m: (x.type(), x.float().type(), i.type(), m.type(), x.half().type(),
                                                  i.int().type(), i.short().type(), i.byte().type())),
    "type_cast": ([X], lambda lib, x: x.type(lib.float32)),
    "type_by_name": ([X], lambda lib, x: x.type("torch.LongTensor")),
    "is_floating_point_method": ([X, I], lambda lib, x, i: (x.is_floating_point(), i.is_floating_point())),
    "sizes": ([B3], lambda lib, x: (tuple(x.size()), x.size(1), x.size(-1), x.dim(), x.ndimension(), x.numel(),
                                    x.nelement(), x.element_size(), x.float().element_size())),
    "to_copy": ([X], lambda lib, x: x.to(lib.float64, copy=True) * 2),
    "to_other": ([X, I], lambda lib, x, i: i.to(x) * x),
    "to_device_dtype": ([X], lambda lib, x: x.to("cpu", lib.float32)),
    "to_keywords": ([X], lambda lib, x: x.to(device="cpu", dtype=lib.float32, non_blocking=True)),
    "to_int": ([X], lambda lib, x: x.to(lib.int64)),
    "new_tensor": ([X], lambda lib, x: x.new_tensor([1, 2])),
    "new_zeros": ([X], lambda lib, x: x.new_zeros(2, 3)),
    "new_zeros_dtype": ([X], lambda lib, x: x.new_zeros((2,), dtype=lib.int64)),
    "new_ones": ([X], lambda lib, x: x.new_ones((2, 1))),
    "new_ones_dtype": ([X], lambda lib, x: x.new_ones(2, dtype=lib.float32)),
    "new_full": ([X], lambda lib, x: x.new_full((2, 2), 7)),
    "new_full_dtype": ([X], lambda lib, x: x.new_full((2,), 1.5, dtype=lib.float32)),
    "new_tensor_dtype": ([X], lambda lib, x: x.new_tensor([1, 2], dtype=lib.int32)),
    # deterministic factories
    "zeros": ([], lambda lib: (lib.zeros(2, 3), lib.zeros((2,), dtype=lib.int64), lib.zeros([1, 2], dtype=lib.bool))),
    "ones": ([], lambda lib: (lib.ones(2, 3), lib.ones(2, dtype=lib.long), lib.ones((2, 2), dtype=lib.float64))),
    "empty_shape": ([], lambda lib: (lib.empty(2, 3).shape, lib.empty(2, dtype=lib.int32).dtype)),
    "full": ([], lambda lib: (lib.full((2, 3), 1.5), lib.full((2,), 7), lib.full((1,), True), lib.full((2,), 2,
                                                                                                      dtype=lib.float64))),
    "eye": ([], lambda lib: (lib.eye(3), lib.eye(2, 4), lib.eye(3, dtype=lib.long))),
    "arange": ([], lambda lib: (lib.arange(5), lib.arange(2, 9, 3), lib.arange(0, 1, 0.25), lib.arange(3.0),
                               lib.arange(5, dtype=lib.float64), lib.arange(4, 0, -1))),
    "linspace": ([], lambda lib: (lib.linspace(-1, 1, 5), lib.linspace(0, 3, 4, dtype=lib.float64),
                                 lib.linspace(2, 2, 1))),
    "tensor": ([], lambda lib: (lib.tensor([1.5, 2]), lib.tensor([1, 2]), lib.tensor([True]), lib.tensor(3.0),
                               lib.tensor([1, 2], dtype=lib.float64), lib.tensor(np.ones(2, np.float64)))),
    "like": ([X, I], lambda lib, x, i: (lib.zeros_like(x), lib.ones_like(i), lib.full_like(x, 2.5),
                                        lib.zeros_like(x, dtype=lib.int64), lib.ones_like(x, dtype=lib.float32),
                                        lib.full_like(i, 3, dtype=lib.float64), lib.empty_like(x).shape,
                                        lib.empty_like(x, dtype=lib.int32).dtype, lib.rand_like(x).shape,
                                        lib.rand_like(x).dtype, lib.randn_like(x, dtype=lib.float32).dtype,
                                        lib.randn_like(x).shape, lib.randint_like(x, 5).shape,
                                        lib.randint_like(i, 5).dtype,
                                        lib.randint_like(x, 2, 5, dtype=lib.int64).dtype)),
    "from_numpy": ([], lambda lib: (lib.from_numpy(np.arange(3)), lib.from_numpy(np.ones(2, np.float32)))),
    "as_tensor": ([], lambda lib: (lib.as_tensor([1.0, 2.0]), lib.as_tensor(np.arange(3), dtype=lib.float64),
                                  lib.as_tensor(np.ones(2)), lib.as_tensor(lib.ones(2), dtype=lib.float64))),
    # each optional argument passed on, and each default as torch's
    "add_alpha_2": ([X, P], lambda lib, a, b: lib.add(a, b, alpha=2)),
    "sub_alpha_2": ([X, P], lambda lib, a, b: lib.sub(a, b, alpha=2)),
    "div_trunc_promotes": ([], lambda lib: (
        lib.div(lib.tensor([7.5, -7.5], dtype=lib.float32), lib.tensor([2.0, 2.0], dtype=lib.float64),
                rounding_mode="trunc"),
        lib.div(lib.tensor([7.5, -7.5], dtype=lib.float64), lib.tensor([2.0, 2.0], dtype=lib.float32),
                rounding_mode="trunc"))),
    "tril_triu_default": ([X], lambda lib, x: (lib.tril(x), lib.triu(x))),
    "mean_keepdim_dtype": ([B3], lambda lib, x: lib.mean(x.float(), 1, keepdim=True, dtype=lib.float64)),
    "amax_amin_keepdim": ([X], lambda lib, x: (lib.amax(x, 1, keepdim=True), lib.amin(x, 0))),
    "max_min_keepdim": ([X], lambda lib, x: (*lib.max(x, 0, keepdim=True), *lib.min(x, 1, True), *lib.min(x, 1))),
    "std_default_keepdim": ([B3], lambda lib, x: (lib.std(x, 1), lib.std(x, 2, keepdim=True))),
    "norm_fn_dtype_keepdim": ([X], lambda lib, x: (lib.norm(x.float(), dtype=lib.float64), lib.norm(x, 2, 1, True))),
    "argmax_argmin_keepdim": ([X], lambda lib, x: (lib.argmax(x, 1, keepdim=True), lib.argmin(x, 0, True))),
    "sort_stable_ties": ([T], lambda lib, t: tuple(lib.sort(t, stable=True))),
    "sort_descending_stable_ties": ([T], lambda lib, t: tuple(lib.sort(t, dim=0, descending=True, stable=True))),
    "argsort_default": ([X], lambda lib, x: lib.argsort(x)),
    "argsort_stable_ties": ([T], lambda lib, t: lib.argsort(t, stable=True)),
    "topk_default_sorted": ([L], lambda lib, x: tuple(lib.topk(x, 7))),
    "allclose_isclose_nan_default": ([NAN], lambda lib, x: (lib.allclose(x, x), lib.isclose(x, x))),
    "isclose_every_argument": ([NAN], lambda lib, x: lib.isclose(x, x + 0.3, 0.0, 0.5, True)),
    "flatten_default_and_end": ([B3], lambda lib, x: (lib.flatten(x), lib.flatten(x, 0, 1))),
    "squeeze_one_of_two": ([X], lambda lib, x: lib.squeeze(x.reshape(1, 3, 1, 4), 2)),
    "unbind_fn_default": ([B3], lambda lib, x: lib.unbind(x)),
    "constants": ([], lambda lib: (lib.inf, lib.pi, lib.e, lib.finfo(lib.float32).eps, lib.finfo(lib.float64).max,
                                  lib.iinfo(lib.int32).max, lib.iinfo(lib.uint8).min, lib.finfo(lib.half).tiny)),
}


def to_lib(lib, array):
    grad = array.dtype.kind == "f"
    return lib.tensor(array, requires_grad=grad) if lib is torch else ta.tensor(array, requires_grad=grad)


def flat(value):
    """Every tensor (or value) in ``value``, in order."""
    if isinstance(value, (tuple, list)):
        return [v for item in value for v in flat(item)]
    return [value]


def as_numpy(value):
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    if isinstance(value, ta.Tensor):
        return value.detach().numpy()
    if isinstance(value, torch.dtype):
        return np.dtype(torch.empty(0, dtype=value).numpy().dtype)
    if isinstance(value, torch.Size):
        return tuple(value)
    return value


def run(lib, name):
    arrays, call = CASES[name]
    inputs = [to_lib(lib, a) for a in arrays]
    out = flat(call(lib, *inputs))
    values = [as_numpy(v) for v in out]
    grads = [None] * len(inputs)
    tensors = [v for v in out if isinstance(v, (torch.Tensor, ta.Tensor)) and v.requires_grad]
    if tensors:
        rng = np.random.default_rng(1)
        total = 0
        for t in tensors:
            upstream = rng.standard_normal(tuple(t.shape)).astype(as_numpy(t).dtype)
            total = total + (t * (torch.tensor(upstream) if lib is torch else ta.tensor(upstream))).sum()
        total.backward()
        grads = [np.asarray(x.grad) if x.requires_grad and x.grad is not None else None for x in inputs]
    return values, grads


@pytest.mark.parametrize("name", sorted(CASES))
def test_namespace_call_matches_torch(name):
    ours, our_grads = run(ta, name)
    theirs, their_grads = run(torch, name)
    assert len(ours) == len(theirs)
    for mine, other in zip(ours, theirs):
        if isinstance(other, np.ndarray):
            assert isinstance(mine, np.ndarray) and mine.dtype == other.dtype and mine.shape == other.shape, (
                name, getattr(mine, "dtype", type(mine)), other.dtype)
            np.testing.assert_allclose(mine, other, rtol=1e-6, atol=1e-7)
        else:
            assert type(mine) is type(other) or isinstance(other, (float, int, np.dtype)), (name, mine, other)
            assert mine == other, (name, mine, other)
    single = any(getattr(v, "dtype", None) == np.float32 for v in theirs)  # a gradient that went through float32
    for mine, other in zip(our_grads, their_grads):
        assert (mine is None) == (other is None), name
        if mine is not None:
            assert mine.dtype == other.dtype
            np.testing.assert_allclose(mine, other, rtol=1e-4 if single else 1e-6, atol=1e-6 if single else 1e-9)


# (the complex and sparse makers refuse whatever they are given: test_program_names_torch.py)
REFUSED_ALWAYS = {"complex", "polar", "sparse_coo_tensor", "sparse_csr_tensor", "view_as_complex", "view_as_real"}
NON_TENSOR_INPUT = sorted(set(ta.autograd.namespace.__all__) - {"einsum", "is_tensor", "pow", "add", "sub", "mul",
                                                                "div"} - REFUSED_ALWAYS)


@pytest.mark.parametrize("name", NON_TENSOR_INPUT)
def test_a_list_for_input_is_refused_naming_the_function_as_torch(name):
    fn = getattr(ta, name)
    args = {"gather": ([1.0], 0, ta.tensor([0])), "masked_fill": ([1.0], ta.tensor([True]), 0.0),
            "topk": ([1.0], 1), "repeat_interleave": ([1.0], 2), "reshape": ([1.0], (1,)),
            "transpose": ([[1.0]], 0, 1), "permute": ([1.0], (0,)),
            "movedim": ([1.0], 0, 0), "unsqueeze": ([1.0], 0), "flip": ([1.0], (0,)),
            "softmax": ([1.0], 0), "log_softmax": ([1.0], 0), "narrow": ([1.0], 0, 0, 1),
            "matrix_power": ([[1.0]], 2), "cumsum": ([1.0], 0), "index_select": ([1.0], 0, ta.tensor([0])),
            "index_fill": ([1.0], 0, ta.tensor([0]), 0.0), "scatter": ([1.0], 0, ta.tensor([0]), ta.ones(1)),
            "swapdims": ([[1.0]], 0, 1), "broadcast_to": ([1.0], (1,)), "logsumexp": ([1.0], 0),
            "lerp": ([1.0], ta.ones(1), 0.5)}.get(name)
    binary = {"allclose", "isclose", "equal", "logical_and", "logical_or", "logical_xor", "matmul", "mm", "bmm",
              "dot", "outer", "eq", "ne", "remainder", "floor_divide", "masked_select", "true_divide", "multiply",
              "subtract", "divide", "gt", "ge", "lt", "le", "greater", "greater_equal", "less", "less_equal",
              "not_equal", "maximum", "minimum", "mv", "bitwise_and", "bitwise_or", "bitwise_xor"}
    if args is None:
        args = ([1.0], ta.ones(1)) if name in binary else ([1.0],)
    message = rf"^{name}\(\): argument 'input' \(position 1\) must be Tensor, not list"
    with pytest.raises(TypeError, match=message):
        fn(*args)
    # torch refuses it too: with this message, or (overloaded functions) a list of the overloads, or for
    # norm an AttributeError from inside; ours is the one message
    with pytest.raises((TypeError, AttributeError)):
        getattr(torch, name)(*args)


@pytest.mark.parametrize(("name", "good", "bad"), [("mm", (3, 4), (4,)), ("bmm", (2, 3, 4), (4, 5)),
                                                   ("bmm", (2, 3, 4), (3, 4, 5)), ("dot", (4,), (4, 1)),
                                                   ("outer", (4,), (4, 1))])
def test_a_wrong_second_operand_alone_is_refused_as_torch_refuses_it(name, good, bad):
    with pytest.raises(RuntimeError):
        getattr(torch, name)(torch.zeros(*good), torch.zeros(*bad))
    with pytest.raises(RuntimeError, match=rf"^{name}: expected"):
        getattr(ta, name)(ta.zeros(*good), ta.zeros(*bad))
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument"):  # a list for the second: named too
        getattr(ta, name)(ta.zeros(*good), [1.0])


def test_einsum_refuses_what_torch_refuses():
    a32, b64 = X.astype(np.float32), X.T.copy()
    for lib in (ta, torch):
        with pytest.raises(RuntimeError):  # torch: "expected scalar type Float but found Double"
            lib.einsum("ij,jk->ik", lib.tensor(a32), lib.tensor(b64))
        with pytest.raises((RuntimeError, ValueError)):  # two subscripts, three dims, no ellipsis
            lib.einsum("ij->i", lib.tensor(B3))
    with pytest.raises(RuntimeError, match=r"einsum: operands have different dtypes \('float32', 'float64'\)"):
        ta.einsum("ij,jk->ik", ta.tensor(a32), ta.tensor(b64))
    with pytest.raises(ValueError, match=r"einsum: subscripts 'ij' do not fit an operand of shape \(2, 3, 4\)"):
        ta.einsum("ij->i", ta.tensor(B3))


def test_gather_refuses_what_torch_refuses_naming_itself():
    x, too_tall, past = X, np.array([[0], [1], [0], [2]]), np.array([[0]])
    for lib in (ta, torch):
        with pytest.raises(RuntimeError):  # index larger than the input outside the gathered dim
            lib.gather(lib.tensor(x), 1, lib.tensor(too_tall))
        with pytest.raises(IndexError):
            lib.tensor(x).gather(5, lib.tensor(past))
    with pytest.raises(RuntimeError, match=r"^gather: index of shape \(4, 1\) is larger than input \(3, 4\) "
                                           r"outside dim 1"):
        ta.gather(ta.tensor(x), 1, ta.tensor(too_tall))
    with pytest.raises(IndexError, match=r"^gather: dim 5 is out of range"):
        ta.tensor(x).gather(5, ta.tensor(past))


def test_an_assigned_value_gets_its_gradient_in_its_own_dtype_and_shape_as_in_torch():
    grads = []
    for lib in (ta, torch):
        x = lib.zeros(2, 4, requires_grad=True) * 1  # float32, in the graph
        v64 = lib.tensor(V, requires_grad=True)  # a float64 row
        wide = lib.tensor(W.astype(np.float32)[None], requires_grad=True)  # (1, 4) into a (4,) row
        x[0] = v64
        x[1] = wide
        x.backward(lib.tensor(X[:2].astype(np.float32)))
        grads.append([(np.asarray(t.grad), t.grad.dtype) for t in (v64, wide)])
    for (ours, our_dtype), (theirs, their_dtype) in zip(*grads):
        assert str(their_dtype) == f"torch.{our_dtype}" and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("keepdim", [False, True])
def test_norm_gradient_where_the_norm_is_zero_is_zero_even_in_reused_memory(keepdim):
    """A zero row's norm has gradient 0 (torch's choice). The op divides only where the norm is not 0, so
    the other elements must be zeros it wrote: NumPy hands a new array memory an old one left behind, and
    here that memory is poisoned with nan first (without the zeros, the gradient would read nan)."""
    x_np = R.standard_normal((4, 3))
    x_np[[0, 2]] = 0.0
    upstream = R.standard_normal((4, 1) if keepdim else (4,))
    grads = []
    for lib in (ta, torch):
        x = lib.tensor(x_np, requires_grad=True)
        out = x.norm(dim=1, keepdim=keepdim)
        poison = [np.full(upstream.shape, np.nan) for _ in range(16)]  # freed below: their memory is reused
        del poison
        out.backward(lib.tensor(upstream))
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=0)
    assert not grads[0][[0, 2]].any()
