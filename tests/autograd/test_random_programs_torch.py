"""Random op programs against torch: values, result dtypes, and every gradient with its dtype.

Each case draws (from its seed) one or two ops and their inputs: shapes that broadcast,
float64, float32 and mixed dtypes, int tensors and Python/NumPy scalars, 0-d and empty
tensors. The same program runs in tinyattn and in torch; the test compares the output's
values and dtype, then backpropagates the same random upstream gradient and compares each
input's gradient and its dtype. Seeded and fast: a few hundred programs in a few seconds.
"""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

FLOATS = [np.float64, np.float32]


def shape(rng, ndim=None, empty=False):
    ndim = int(rng.integers(0, 4)) if ndim is None else ndim
    dims = [int(rng.integers(1, 4)) for _ in range(ndim)]
    if empty and dims:
        dims[int(rng.integers(len(dims)))] = 0
    return tuple(dims)


def broadcastable(rng, base):
    """A shape that broadcasts with ``base``: some dims set to 1, some leading dims dropped."""
    out = [1 if rng.random() < 0.3 else d for d in base]
    return tuple(out[int(rng.integers(0, len(out) + 1)):]) if out else ()


class Leaf:
    """An input: an array and whether it requires grad (floats only)."""

    def __init__(self, array, grad):
        self.array, self.grad = array, grad and array.dtype.kind == "f"


def leaf(rng, shp, dtype=None, grad=True):
    dtype = dtype or FLOATS[int(rng.integers(2))]
    if np.dtype(dtype).kind == "i":
        return Leaf(np.asarray(rng.integers(-3, 4, shp)).astype(dtype), False)
    return Leaf(np.asarray(rng.standard_normal(shp)).astype(dtype), grad)


def scalar(rng):
    kind = int(rng.integers(4))
    return [float(rng.uniform(0.5, 2)), int(rng.integers(1, 4)), np.float64(rng.uniform(0.5, 2)), 2.0][kind]


def binary(rng):
    op = ["add", "sub", "mul", "div"][int(rng.integers(4))]
    base = shape(rng, empty=rng.random() < 0.1)
    a = leaf(rng, base, [np.float64, np.float32, np.int64][int(rng.integers(3))])
    if rng.random() < 0.3:
        b = scalar(rng)
    else:
        b = leaf(rng, broadcastable(rng, base), [np.float64, np.float32, np.int64][int(rng.integers(3))])
    for x in (a, b):
        if op == "div" and isinstance(x, Leaf):
            x.array[x.array == 0] = 1  # never divide by zero (0-d arrays included)
    swap = rng.random() < 0.3
    fns = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y}
    fn = fns[op]
    return ([b, a] if swap else [a, b]), fn


def unary(rng):
    name = ["exp", "tanh", "sigmoid", "abs", "relu", "neg", "sqrt", "log"][int(rng.integers(8))]
    dtype = [np.float64, np.float32, np.int64][int(rng.integers(3))]
    x = leaf(rng, shape(rng, empty=rng.random() < 0.1), dtype)
    if name in ("sqrt", "log"):
        x.array = np.abs(x.array) + 1
    fn = (lambda t: -t) if name == "neg" else (lambda t: getattr(t, name)())
    return [x], fn


def reduction(rng):
    name = ["sum", "mean", "amax", "var"][int(rng.integers(4))]
    shp = shape(rng, empty=rng.random() < 0.15)  # 0-d and empty tensors too
    x = leaf(rng, shp)
    if not shp:
        dims = [int(rng.choice([0, -1]))]  # a 0-d tensor takes dim 0 or -1, as in torch
    else:
        dims = [d for d in range(len(shp)) if rng.random() < 0.5] or [int(rng.integers(len(shp)))]
    if x.array.size == 0 or name == "var" and x.array.size < 4:
        name = "sum"  # (torch refuses amax over an empty dim and warns on var without enough elements)
    keepdim = bool(rng.integers(2))
    dim = tuple(dims) if len(dims) > 1 else dims[0]
    return [x], lambda t: getattr(t, name)(dim=dim, keepdim=keepdim)


def softmaxes(rng):
    name = ["softmax", "log_softmax"][int(rng.integers(2))]
    shp = shape(rng, empty=rng.random() < 0.15)
    x = leaf(rng, shp)
    dim = int(rng.integers(-max(len(shp), 1), max(len(shp), 1)))
    return [x], lambda t: getattr(t, name)(dim)


def shape_ops(rng):
    shp = shape(rng)
    x = leaf(rng, shp)
    kind = int(rng.integers(5))
    n = max(len(shp), 1)  # a 0-d tensor takes dim 0 or -1
    if kind == 0:
        return [x], lambda t: t.reshape(-1)
    if kind == 1:
        a, b = (int(v) for v in rng.integers(-n, n, 2))
        return [x], lambda t: t.transpose(a, b)
    if kind == 2:
        perm = tuple(int(v) for v in rng.permutation(len(shp)))
        return [x], lambda t: t.permute(perm)
    if kind == 3:
        d = int(rng.integers(-len(shp) - 1, len(shp) + 1))
        return [x], lambda t: t.unsqueeze(d)
    return [x], lambda t: t.flatten()


def indexing(rng):
    shp = shape(rng, ndim=int(rng.integers(1, 4)))
    x = leaf(rng, shp)
    n0 = shp[0]
    choices = [
        (slice(None, None, 2),),
        (Ellipsis, 0),
        (None, Ellipsis),
        (np.array([0, n0 - 1, 0]),),  # fancy, with a repeat
        (np.array([], dtype=np.int64),),  # empty
        (rng.random(shp) > 0.5,),  # bool mask
    ]
    index = choices[int(rng.integers(len(choices)))]
    index = index[0] if len(index) == 1 else index
    return [x], lambda t: t[index]


def joins(rng):
    kind = ["cat", "stack", "split", "chunk", "where", "masked_fill"][int(rng.integers(6))]
    shp = shape(rng, ndim=int(rng.integers(1, 4)))
    if kind in ("cat", "stack"):
        xs = [leaf(rng, shp, FLOATS[int(rng.integers(2))]) for _ in range(int(rng.integers(1, 4)))]
        dim = int(rng.integers(0, len(shp) + (kind == "stack")))
        if kind == "cat":
            return xs, lambda *ts, lib: lib.cat(ts, dim)
        return xs, lambda *ts, lib: lib.stack(ts, dim)
    x = leaf(rng, shp)
    if kind in ("split", "chunk"):
        d = int(rng.integers(len(shp)))
        size = int(rng.integers(1, 3))
        if kind == "split":
            return [x], lambda t, lib: lib.cat([p * (i + 1) for i, p in enumerate(t.split(size, d))], d)
        return [x], lambda t, lib: lib.cat([p * (i + 1) for i, p in enumerate(t.chunk(size, d))], d)
    cond = rng.random(shp) > 0.5
    if kind == "where":
        y = leaf(rng, broadcastable(rng, shp))
        return [x, y], lambda a, b, lib: lib.where(lib.tensor(cond), a, b)
    value = float(rng.normal())
    return [x], lambda t, lib: t.masked_fill(lib.tensor(cond), value)


def matmuls(rng):
    dtype = FLOATS[int(rng.integers(2))]
    k = int(rng.integers(1, 4))
    kind = int(rng.integers(5))
    batch = shape(rng, ndim=int(rng.integers(0, 3)))
    a_shape = {0: (k,), 1: (2, k), 2: (k,), 3: batch + (2, k), 4: (2, k)}[kind]
    b_shape = {0: (k, 3), 1: (k,), 2: (k,), 3: (k, 3), 4: batch + (k, 3)}[kind]
    return [leaf(rng, a_shape, dtype), leaf(rng, b_shape, dtype)], lambda a, b: a @ b


def chain(rng):
    """Two ops in a row: a broadcasting binary op, then a softmax or a reduction of its result."""
    (inputs, first) = binary(rng)
    ndim = np.broadcast(*[x.array if isinstance(x, Leaf) else 0 for x in inputs]).ndim
    then = int(rng.integers(3))
    dim = int(rng.integers(-max(ndim, 1), max(ndim, 1)))

    def fn(*args):
        out = first(*args)
        if out.dtype not in (np.float32, np.float64, torch.float32, torch.float64):
            return out * 2
        return [lambda t: t.softmax(dim), lambda t: t.sum(dim=dim), lambda t: t.log_softmax(dim).exp()][then](out)

    return inputs, fn


def namespace_fns(rng, kind=None):
    """One namespace function (``lib.sin(t)``, ``lib.gather(t, d, index)``...), called as torch code calls it."""
    kind = kind or NAMESPACE[int(rng.integers(len(NAMESPACE)))]
    dtype = [np.float64, np.float32, np.int64][int(rng.integers(3))] if kind in ("sin", "cos", "clamp") else None
    shp = shape(rng, ndim=int(rng.integers(2 if kind in ("tril", "triu") else 1, 4)), empty=rng.random() < 0.1)
    x = leaf(rng, shp, dtype)
    d = int(rng.integers(-len(shp), len(shp)))
    if kind in ("sin", "cos"):
        return [x], lambda t, lib: getattr(lib, kind)(t)
    if kind == "clamp":
        lo, hi = sorted(float(v) for v in rng.normal(size=2))
        which = int(rng.integers(3))
        return [x], lambda t, lib: lib.clamp(t, lo if which != 1 else None, hi if which != 0 else None)
    if kind in ("tril", "triu"):
        k = int(rng.integers(-2, 3))
        return [x], lambda t, lib: getattr(lib, kind)(t, k)
    if kind == "gather":
        index_shape = tuple(int(rng.integers(1, n + 1)) if n else 0 for n in shp)
        index = rng.integers(0, max(shp[d], 1), index_shape) if shp[d] else np.zeros(index_shape, np.int64)
        if not shp[d]:
            index_shape = tuple(0 if i == d % len(shp) else n for i, n in enumerate(index_shape))
            index = np.zeros(index_shape, np.int64)
        return [x], lambda t, lib: lib.gather(t, d, lib.tensor(index))
    if kind == "norm":
        p = [2, 1, 3, float("inf")][int(rng.integers(4))]
        x.array[np.abs(x.array) < 0.05] = 0.5  # (no element at the kinks of |x|)
        keepdim = bool(rng.integers(2))
        return [x], lambda t, lib: lib.norm(t, p=p, dim=d, keepdim=keepdim)
    if kind in ("topk", "sort"):
        x.array = x.array + np.arange(x.array.size).reshape(shp) * 1e-3  # no ties: indices are then unique
        if kind == "sort":
            descending = bool(rng.integers(2))
            return [x], lambda t, lib: lib.sort(t, d, descending).values
        k = int(rng.integers(0, shp[d] + 1))
        largest = bool(rng.integers(2))
        return [x], lambda t, lib: lib.topk(t, k, d, largest).values
    if kind == "repeat":
        reps = tuple(int(v) for v in rng.integers(1, 3, len(shp) + int(rng.integers(2))))
        return [x], lambda t: t.repeat(*reps)
    if kind == "repeat_interleave":
        counts = int(rng.integers(0, 3)) if rng.random() < 0.5 else rng.integers(0, 3, shp[d])
        return [x], lambda t, lib: lib.repeat_interleave(t, lib.tensor(counts) if np.ndim(counts) else counts, d)
    if kind == "flip":
        dims = tuple(int(v) - len(shp) * int(rng.integers(2))  # each dim once, some of them negative
                     for v in rng.permutation(len(shp))[: int(rng.integers(1, len(shp) + 1))])
        return [x], lambda t, lib: lib.flip(t, dims)
    if kind == "unbind":
        return [x], lambda t, lib: lib.stack([u * (i + 1) for i, u in enumerate(lib.unbind(t, d))] or [t.sum()])
    if kind in PRODUCTS:
        which = kind
        n, k, m = (int(v) for v in rng.integers(1, 4, 3))
        dt = FLOATS[int(rng.integers(2))]
        shapes = {"mm": [(n, k), (k, m)], "bmm": [(2, n, k), (2, k, m)], "dot": [(k,), (k,)], "outer": [(n,), (m,)],
                  "einsum": [(2, n, k), (m, k)]}[which]
        a, b = (leaf(rng, s, dt) for s in shapes)
        if which == "einsum":
            return [a, b], lambda u, v, lib: lib.einsum("bnk,mk->bmn", u, v)
        return [a, b], lambda u, v, lib: getattr(lib, which)(u, v)
    if kind == "clone":
        return [x], lambda t, lib: lib.clone(t) * 2
    if kind == "pow":
        x.array = np.abs(x.array) + 0.5
        exponent = [2, 0.5, -1.5, 3.0][int(rng.integers(4))]
        if rng.random() < 0.25:
            return [x], lambda t, lib: lib.square(t)
        return [x], lambda t, lib: lib.pow(t, exponent)
    if kind == "views":
        which = int(rng.integers(4))
        if which == 0:
            y = leaf(rng, shape(rng, ndim=int(rng.integers(0, 3))))
            return [y], lambda t: t.t() * 2
        if which == 1:
            y = leaf(rng, shape(rng, ndim=int(rng.integers(2, 4))))
            return [y], lambda t: t.mT * 2
        if which == 2:
            return [x], lambda t, lib: t.view_as(lib.zeros(int(np.prod(shp)))) * 2
        target = tuple(int(v) for v in rng.integers(1, 3, int(rng.integers(0, 2)))) + tuple(shp)
        return [x], lambda t, lib: t.expand_as(lib.zeros(target)) * 2
    to = [np.float64, np.float32][int(rng.integers(2))]
    return [x], lambda t, lib: t.to(lib.float64 if to == np.float64 else lib.float32) * 3


PRODUCTS = ["mm", "bmm", "dot", "outer", "einsum"]
NAMESPACE = ["sin", "cos", "clamp", "tril", "triu", "gather", "norm", "topk", "sort", "repeat", "repeat_interleave",
             "flip", "unbind", *PRODUCTS, "clone", "to", "pow", "views"]
GENERATORS = [binary, unary, reduction, softmaxes, shape_ops, indexing, joins, matmuls, chain, namespace_fns]


def to_lib(lib, value):
    if isinstance(value, Leaf):
        if lib is torch:
            return torch.tensor(value.array, requires_grad=value.grad)
        return ta.tensor(value.array, requires_grad=value.grad)
    return value


def run(lib, inputs, fn, upstream_seed):
    args = [to_lib(lib, v) for v in inputs]
    try:
        out = fn(*args, lib=lib)
    except TypeError as err:
        if "lib" not in str(err):
            raise
        out = fn(*args)
    result = out.detach().numpy() if lib is torch else out.array.copy()
    grads = [None] * len(args)
    if out.requires_grad and out.dtype in (torch.float32, torch.float64, np.float32, np.float64):
        upstream = np.random.default_rng(upstream_seed).standard_normal(tuple(out.shape))
        out.backward(lib.tensor(upstream.astype(result.dtype)) if lib is torch else upstream.astype(result.dtype))
        grads = [(a.grad.numpy() if lib is torch else a.grad) if getattr(a, "requires_grad", False) else None
                 for a in args]
    return result, grads


@pytest.mark.parametrize("seed", range(600))
def test_random_program_matches_torch(seed):
    rng = np.random.default_rng(seed)
    generator = GENERATORS[seed % len(GENERATORS)]
    compare(generator.__name__, *generator(rng), seed)


@pytest.mark.parametrize("seed", range(20 * len(NAMESPACE)))
def test_random_namespace_program_matches_torch(seed):
    """Every namespace function twenty times, each with its own random shapes, dtypes and arguments."""
    kind = NAMESPACE[seed % len(NAMESPACE)]
    compare(kind, *namespace_fns(np.random.default_rng(seed), kind), seed)


def compare(name, inputs, fn, seed):
    """Run one program in both libraries; compare the output (values, dtype, shape) and every gradient."""
    ours, our_grads = run(ta, inputs, fn, seed)
    theirs, their_grads = run(torch, inputs, fn, seed)
    assert ours.dtype == theirs.dtype, (name, ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape
    tol = 1e-5 if ours.dtype == np.float32 else 1e-10
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)
    for mine, other in zip(our_grads, their_grads):
        assert (mine is None) == (other is None)
        if mine is not None:
            assert mine.dtype == other.dtype and mine.shape == other.shape
            # a float64 input of a float32 op gets a gradient computed in float32 (then cast), as in torch
            gtol = 1e-4 if np.float32 in (mine.dtype, ours.dtype) else 1e-9
            np.testing.assert_allclose(mine, other, rtol=gtol, atol=gtol)
