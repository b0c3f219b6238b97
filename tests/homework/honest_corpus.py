"""Right answers to every task of the shipped course and of ``examples/course``, ten per task, as students write them.

Each task has ten answers, one per style, in the same order for every task, so that submission ``k`` of a
course holds answer ``k`` of each of its tasks:

0. plain NumPy (or tensor) calls, another order than the reference's
1. another formulation: ``einsum``, ``tensordot``, ``moveaxis``, a formula rearranged
2. a helper with type annotations (the file saved with Windows line ends)
3. explicit loops
4. a lambda and a comprehension
5. the walrus operator
6. Greek names (the file saved with a byte-order mark)
7. a nested block indented with a tab
8. a set, and an ``assert np.allclose(...)`` or other sanity check
9. annotated locals and a docstring

An answer is a list of the code of each of the task's regions, in the order they come in its files, written
at the region's own indentation (``fill`` indents it to the stub's). ``STYLES`` names each style, for the
tests' messages.
"""

from __future__ import annotations

STYLES = ["plain", "another formulation", "typed helper, CRLF", "loops", "lambda and comprehension", "walrus",
          "Greek names, BOM", "tab-indented block", "set and assert", "annotated locals and a docstring"]
CRLF, BOM = 2, 6  # the submissions whose task files are saved with Windows line ends, with a byte-order mark

UNBROADCAST = [
    ["""
while grad.ndim > len(shape):
    grad = grad.sum(axis=0)
for i, n in enumerate(shape):
    if n == 1 and grad.shape[i] != 1:
        grad = grad.sum(axis=i, keepdims=True)
"""],
    ["""
lead = grad.ndim - len(shape)
padded = (1,) * lead + tuple(shape)
axes = tuple(i for i, (g, s) in enumerate(zip(grad.shape, padded)) if s == 1 and g != 1)
grad = grad.sum(axis=axes, keepdims=True).reshape(shape)
"""],
    ["""
def summed_over(g: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return g.sum(axis=axes, keepdims=True) if axes else g
extra = grad.ndim - len(shape)
grad = grad.sum(axis=tuple(range(extra))) if extra > 0 else grad
grad = summed_over(grad, tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1))
"""],
    ["""
for _ in range(grad.ndim - len(shape)):
    grad = grad.sum(axis=0)
i = 0
while i < len(shape):
    if shape[i] == 1 and grad.shape[i] > 1:
        grad = grad.sum(axis=i, keepdims=True)
    i += 1
"""],
    ["""
squash = lambda g, axes: g.sum(axis=axes, keepdims=True)
extra = grad.ndim - len(shape)
grad = squash(grad, tuple(range(extra))).reshape(grad.shape[extra:]) if extra else grad
grad = squash(grad, tuple([i for i in range(len(shape)) if shape[i] == 1]))
"""],
    ["""
if (extra := grad.ndim - len(shape)) > 0:
    grad = np.sum(grad, axis=tuple(range(extra)))
if (stretched := [i for i, n in enumerate(shape) if n == 1 and grad.shape[i] > 1]):
    grad = np.sum(grad, axis=tuple(stretched), keepdims=True)
"""],
    ["""
Δ = grad.ndim - len(shape)
for _ in range(Δ):
    grad = grad.sum(axis=0)
for ι in range(len(shape)):
    if shape[ι] == 1 and grad.shape[ι] != 1:
        grad = np.add.reduce(grad, axis=ι, keepdims=True)
"""],
    ["""
extra = grad.ndim - len(shape)
if extra > 0:
\tgrad = grad.sum(axis=tuple(range(extra)))
axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
if axes:
\tgrad = grad.sum(axis=axes, keepdims=True)
"""],
    ["""
offset = grad.ndim - len(shape)
axes = set(range(offset))
for i, n in enumerate(shape):
    if n == 1:
        axes.add(i + offset)
total = grad.sum()
grad = grad.sum(axis=tuple(sorted(axes)), keepdims=True).reshape(shape)
assert np.allclose(grad.sum(), total), "summing over copies keeps the total"
"""],
    ['''
"""Sum the gradient over the axes broadcasting copied the input along."""
leading: int = grad.ndim - len(shape)
kept: np.ndarray = grad.sum(axis=tuple(range(leading))) if leading else grad
ones: list[int] = [axis for axis, size in enumerate(shape) if size == 1 and kept.shape[axis] != 1]
grad = kept.sum(axis=tuple(ones), keepdims=True) if ones else kept
assert grad.shape == tuple(shape), (grad.shape, shape)
'''],
]

MATMUL_BACKWARD = [
    ["""
if ctx.needs_input_grad[0]:
    da = unbroadcast(np.matmul(grad_output, np.swapaxes(b, -1, -2)), a.shape)
if ctx.needs_input_grad[1]:
    db = unbroadcast(np.matmul(np.swapaxes(a, -1, -2), grad_output), b.shape)
"""],
    ["""
if ctx.needs_input_grad[0]:
    da = unbroadcast(np.einsum("...nm,...km->...nk", grad_output, b), a.shape)
if ctx.needs_input_grad[1]:
    db = unbroadcast(np.einsum("...nk,...nm->...km", a, grad_output), b.shape)
"""],
    ["""
def transposed(m: np.ndarray) -> np.ndarray:
    return m.swapaxes(-1, -2)
wanted = ctx.needs_input_grad
if wanted[0]:
    da = unbroadcast(grad_output @ transposed(b), a.shape)
if wanted[1]:
    db = unbroadcast(transposed(a) @ grad_output, b.shape)
"""],
    ["""
if ctx.needs_input_grad[0]:
    da = unbroadcast(grad_output @ b.swapaxes(-1, -2), a.shape)
if ctx.needs_input_grad[1]:
    batch = grad_output.shape[:-2]
    flat_a = np.broadcast_to(a, batch + a.shape[-2:]).reshape(-1, a.shape[-2], a.shape[-1])
    flat_g = grad_output.reshape(-1, grad_output.shape[-2], grad_output.shape[-1])
    each = [flat_a[i].T @ flat_g[i] for i in range(flat_g.shape[0])]
    db = unbroadcast(np.stack(each).reshape(batch + (a.shape[-1], grad_output.shape[-1])), b.shape)
"""],
    ["""
T = lambda m: np.swapaxes(m, -1, -2)
needed = [i for i, wanted in enumerate(ctx.needs_input_grad) if wanted]
if 0 in needed:
    da = unbroadcast(grad_output @ T(b), a.shape)
if 1 in needed:
    db = unbroadcast(T(a) @ grad_output, b.shape)
"""],
    ["""
if (want_a := ctx.needs_input_grad[0]):
    da = unbroadcast(np.matmul(grad_output, b.swapaxes(-1, -2)), a.shape)
if (want_b := ctx.needs_input_grad[1]):
    db = unbroadcast(np.matmul(a.swapaxes(-1, -2), grad_output), b.shape)
"""],
    ["""
α, β, γ = a, b, grad_output
if ctx.needs_input_grad[0]:
    dα = γ @ β.swapaxes(-1, -2)
    da = unbroadcast(dα, α.shape)
if ctx.needs_input_grad[1]:
    dβ = α.swapaxes(-1, -2) @ γ
    db = unbroadcast(dβ, β.shape)
"""],
    ["""
if ctx.needs_input_grad[0]:
\tda = grad_output @ b.swapaxes(-1, -2)
\tda = unbroadcast(da, a.shape)
if ctx.needs_input_grad[1]:
\tdb = a.swapaxes(-1, -2) @ grad_output
\tdb = unbroadcast(db, b.shape)
"""],
    ["""
needed = {i for i, wanted in enumerate(ctx.needs_input_grad) if wanted}
if 0 in needed:
    da = unbroadcast(grad_output @ b.swapaxes(-1, -2), a.shape)
    assert da.shape == a.shape, (da.shape, a.shape)
if 1 in needed:
    db = unbroadcast(a.swapaxes(-1, -2) @ grad_output, b.shape)
    assert np.all(np.isfinite(db))
"""],
    ['''
"""dA = dC Bᵀ and dB = Aᵀ dC, each summed over what was broadcast."""
bt: np.ndarray = b.swapaxes(-1, -2)
at: np.ndarray = a.swapaxes(-1, -2)
if ctx.needs_input_grad[0]:
    da = unbroadcast(grad_output @ bt, a.shape)
if ctx.needs_input_grad[1]:
    db = unbroadcast(at @ grad_output, b.shape)
'''],
]

LINEAR_FORWARD = [
    ["""
y = np.matmul(x, np.transpose(w))
if b is not None:
    y = y + b
"""],
    ["""
y = np.einsum("...i,oi->...o", x, w)
if b is not None:
    y += b
"""],
    ["""
def affine(v: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    out = v @ weight.T
    return out if bias is None else out + bias
y = affine(x, w, b)
"""],
    ["""
flat = x.reshape(-1, x.shape[-1])
rows = [row @ w.T for row in flat]
y = np.array(rows).reshape(x.shape[:-1] + (w.shape[0],))
if b is not None:
    y = y + b
"""],
    ["""
project = lambda v: v @ w.T
y = project(x)
y = y if b is None else y + b
"""],
    ["""
y = x @ w.swapaxes(0, 1)
if (bias := b) is not None:
    y += bias
"""],
    ["""
ω = w
y = x @ ω.T
if b is not None:
    y = y + b
"""],
    ["""
y = np.tensordot(x, w, axes=([-1], [1]))
if b is not None:
\ty = y + b
"""],
    ["""
y = x @ w.T
if b is not None:
    y += b
assert y.shape == x.shape[:-1] + (w.shape[0],), "one output per row of the weight"
"""],
    ['''
"""Y = X Wᵀ + b, the weight stored (out, in)."""
y: np.ndarray = x @ w.T
if b is not None:
    y = y + b
'''],
]

SHAPE_BACKWARD = [
    ["return (np.reshape(grad_output, ctx.shape),)", "return (np.swapaxes(grad_output, *ctx.dims),)"],
    ["return (grad_output.ravel().reshape(ctx.shape),)", """
axes = list(range(grad_output.ndim))
axes[ctx.dims[0]], axes[ctx.dims[1]] = axes[ctx.dims[1]], axes[ctx.dims[0]]
return (grad_output.transpose(axes),)
"""],
    ["""
def back(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return g.reshape(shape)
return (back(grad_output, ctx.shape),)
""", """
def swap(g: np.ndarray, i: int, j: int) -> np.ndarray:
    return g.swapaxes(i, j)
return (swap(grad_output, ctx.dims[0], ctx.dims[1]),)
"""],
    ["""
flat = grad_output.ravel()
out = np.empty(flat.size)
for i in range(flat.size):
    out[i] = flat[i]
return (out.reshape(ctx.shape),)
""", """
i, j = ctx.dims
perm = []
for axis in range(grad_output.ndim):
    if axis == i:
        perm.append(j)
    elif axis == j:
        perm.append(i)
    else:
        perm.append(axis)
return (grad_output.transpose(perm),)
"""],
    ["""
back = lambda g: g.reshape(ctx.shape)
return (back(grad_output),)
""", """
i, j = ctx.dims
perm = [j if axis == i else i if axis == j else axis for axis in range(grad_output.ndim)]
return (grad_output.transpose(perm),)
"""],
    ["""
if (size := grad_output.size) != int(np.prod(ctx.shape)):
    raise ValueError(f"{size} gradients for an input of shape {ctx.shape}")
return (grad_output.reshape(ctx.shape),)
""", "return (grad_output.swapaxes((dims := ctx.dims)[0], dims[1]),)"],
    ["""
γ = grad_output
return (γ.reshape(ctx.shape),)
""", """
γ = grad_output
(ι, κ) = ctx.dims
return (γ.swapaxes(ι, κ),)
"""],
    ["""
if grad_output.shape == tuple(ctx.shape):
\treturn (grad_output,)
return (grad_output.reshape(ctx.shape),)
""", """
i, j = ctx.dims
if i == j:
\treturn (grad_output,)
return (grad_output.swapaxes(i, j),)
"""],
    ["""
out = grad_output.reshape(ctx.shape)
assert np.allclose(out.sum(), grad_output.sum()), "a reshape moves no value"
return (out,)
""", """
moved = set(ctx.dims)
out = grad_output.swapaxes(min(moved), max(moved))
assert out.size == grad_output.size
return (out,)
"""],
    ['''
"""A reshape keeps the elements in order: its backward is a reshape back."""
out: np.ndarray = grad_output.reshape(ctx.shape)
return (out,)
''', '''
"""A transpose moves elements: its backward moves them back, with the same swap."""
i: int
j: int
i, j = ctx.dims
return (grad_output.swapaxes(i, j),)
'''],
]

SOFTMAX_BACKWARD = [
    ["""
(y,) = ctx.saved_tensors
return (y * grad_output - y * np.sum(y * grad_output, axis=ctx.dim, keepdims=True),)
"""],
    ["""
(y,) = ctx.saved_tensors
d = ctx.dim % y.ndim
p = np.moveaxis(y, d, -1)
g = np.moveaxis(grad_output, d, -1)
s = np.einsum("...i,...i->...", g, p)[..., None]
return (np.moveaxis(p * (g - s), -1, d),)
"""],
    ["""
def weighted_sum(g: np.ndarray, p: np.ndarray, axis: int) -> np.ndarray:
    return (g * p).sum(axis=axis, keepdims=True)
(y,) = ctx.saved_tensors
return (y * (grad_output - weighted_sum(grad_output, y, ctx.dim)),)
"""],
    ["""
(y,) = ctx.saved_tensors
d = ctx.dim % y.ndim
p = np.moveaxis(y, d, -1)
g = np.moveaxis(grad_output, d, -1)
rows_p = p.reshape(-1, p.shape[-1])
rows_g = g.reshape(-1, g.shape[-1])
out = np.empty_like(rows_g)
for r in range(rows_g.shape[0]):
    out[r] = rows_p[r] * (rows_g[r] - rows_g[r] @ rows_p[r])
return (np.moveaxis(out.reshape(g.shape), -1, d),)
"""],
    ["""
(y,) = ctx.saved_tensors
rowsum = lambda t: t.sum(axis=ctx.dim, keepdims=True)
parts = [grad_output, rowsum(grad_output * y)]
return (y * (parts[0] - parts[1]),)
"""],
    ["""
(y,) = ctx.saved_tensors
return (y * (grad_output - (s := (grad_output * y).sum(axis=ctx.dim, keepdims=True))),)
"""],
    ["""
(σ,) = ctx.saved_tensors
δ = grad_output
return (σ * δ - σ * (σ * δ).sum(axis=ctx.dim, keepdims=True),)
"""],
    ["""
(y,) = ctx.saved_tensors
if ctx.dim is None:
\taxis = None
else:
\taxis = ctx.dim
return (y * (grad_output - (grad_output * y).sum(axis=axis, keepdims=True)),)
"""],
    ["""
(y,) = ctx.saved_tensors
axes = {ctx.dim}
grad = y * (grad_output - (grad_output * y).sum(axis=tuple(axes), keepdims=True))
assert np.allclose(grad.sum(axis=ctx.dim), 0.0), "softmax's gradient sums to zero along its dim"
return (grad,)
"""],
    ['''
"""dX = Y ⊙ (dY − Σ_j dY_j Y_j), one sum per row."""
y: np.ndarray
(y,) = ctx.saved_tensors
dot: np.ndarray = np.sum(grad_output * y, axis=ctx.dim, keepdims=True)
return (np.multiply(y, np.subtract(grad_output, dot)),)
'''],
]

LOG_SOFTMAX_BACKWARD = [
    ["""
(y,) = ctx.saved_tensors
total = np.sum(grad_output, axis=ctx.dim, keepdims=True)
return (grad_output - np.exp(y) * total,)
"""],
    ["""
(y,) = ctx.saved_tensors
d = ctx.dim % y.ndim
g = np.moveaxis(grad_output, d, -1)
p = np.exp(np.moveaxis(y, d, -1))
s = np.einsum("...i->...", g)[..., None]
return (np.moveaxis(g - p * s, -1, d),)
"""],
    ["""
def softmax_of_log(logp: np.ndarray) -> np.ndarray:
    return np.exp(logp)
(y,) = ctx.saved_tensors
return (grad_output - softmax_of_log(y) * grad_output.sum(axis=ctx.dim, keepdims=True),)
"""],
    ["""
(y,) = ctx.saved_tensors
d = ctx.dim % y.ndim
g = np.moveaxis(grad_output, d, -1)
p = np.exp(np.moveaxis(y, d, -1))
rows_g = g.reshape(-1, g.shape[-1])
rows_p = p.reshape(-1, p.shape[-1])
out = np.empty_like(rows_g)
for r in range(rows_g.shape[0]):
    out[r] = rows_g[r] - rows_p[r] * rows_g[r].sum()
return (np.moveaxis(out.reshape(g.shape), -1, d),)
"""],
    ["""
(y,) = ctx.saved_tensors
rowsum = lambda t: t.sum(axis=ctx.dim, keepdims=True)
return ([grad_output - np.exp(y) * rowsum(grad_output)][0],)
"""],
    ["""
(y,) = ctx.saved_tensors
return (grad_output - np.exp(y) * (s := grad_output.sum(axis=ctx.dim, keepdims=True)),)
"""],
    ["""
(λ,) = ctx.saved_tensors
δ = grad_output
return (δ - np.exp(λ) * δ.sum(axis=ctx.dim, keepdims=True),)
"""],
    ["""
(y,) = ctx.saved_tensors
if ctx.dim is None:
\taxis = None
else:
\taxis = ctx.dim
return (grad_output - np.exp(y) * grad_output.sum(axis=axis, keepdims=True),)
"""],
    ["""
(y,) = ctx.saved_tensors
axes = {ctx.dim}
grad = grad_output - np.exp(y) * grad_output.sum(axis=tuple(axes), keepdims=True)
assert np.allclose(grad.sum(axis=ctx.dim), 0.0, atol=1e-6), "log_softmax's gradient sums to zero along its dim"
return (grad,)
"""],
    ['''
"""dX = dY − softmax(X) Σ_j dY_j, with softmax(X) = exp(Y)."""
y: np.ndarray
(y,) = ctx.saved_tensors
p: np.ndarray = np.exp(y)
return (grad_output - p * grad_output.sum(axis=ctx.dim, keepdims=True),)
'''],
]

ATTENTION = [
    ["""
scores = q @ k.transpose(-2, -1) * scale
if mask is not None:
    scores = scores + mask
p = scores.softmax(dim=-1)
if dropout_p > 0.0:
    p = dropout(p, dropout_p)
return p @ v, p
"""],
    ["""
scores = (q * scale) @ k.transpose(-1, -2)
if mask is not None:
    scores = scores + mask
p = softmax(scores, dim=-1)
if dropout_p > 0.0:
    p = dropout(p, dropout_p)
return p @ v, p
"""],
    ["""
def weights(s: Tensor, m: Tensor | None) -> Tensor:
    return (s if m is None else s + m).softmax(dim=-1)
p = weights(q @ k.transpose(-2, -1) * scale, mask)
if dropout_p > 0.0:
    p = dropout(p, dropout_p)
return p @ v, p
"""],
    ["""
scores = q @ k.transpose(-2, -1)
scores = scores * scale
for extra in [mask]:
    if extra is not None:
        scores = scores + extra
p = scores.softmax(dim=-1)
if dropout_p > 0.0:
    p = dropout(p, dropout_p)
return p @ v, p
"""],
    ["""
masked = lambda s: s if mask is None else s + mask
p = masked(q @ k.transpose(-2, -1) * scale).softmax(dim=-1)
p = [dropout(p, dropout_p) if dropout_p > 0.0 else p][0]
return p @ v, p
"""],
    ["""
scores = q @ k.transpose(-2, -1) * scale
if (m := mask) is not None:
    scores = scores + m
p = scores.softmax(dim=-1)
if (rate := dropout_p) > 0.0:
    p = dropout(p, rate)
return p @ v, p
"""],
    ["""
σ = scale
α = (q @ k.transpose(-2, -1) * σ)
if mask is not None:
    α = α + mask
π = α.softmax(dim=-1)
if dropout_p > 0.0:
    π = dropout(π, dropout_p)
return π @ v, π
"""],
    ["""
scores = q @ k.transpose(-2, -1) * scale
if mask is not None:
\tscores = scores + mask
p = scores.softmax(dim=-1)
if dropout_p > 0.0:
\tp = dropout(p, dropout_p)
return p @ v, p
"""],
    ["""
assert q.shape[-1] == k.shape[-1], "queries and keys share d_k"
last = {-1}
scores = q @ k.transpose(-2, -1) * scale
if mask is not None:
    scores = scores + mask
p = scores.softmax(dim=min(last))
if dropout_p > 0.0:
    p = dropout(p, dropout_p)
return p @ v, p
"""],
    ['''
"""softmax(Q Kᵀ / √d_k + M) V, and the weights."""
scores: Tensor = q @ k.transpose(-2, -1) * scale
if mask is not None:
    scores = scores + mask
p: Tensor = scores.softmax(dim=-1)
if dropout_p > 0.0:
    p = dropout(p, dropout_p)
return p @ v, p
'''],
]

SPLIT_HEADS = [
    ["""
q = q.reshape(B, L, h, d_k).transpose(1, 2)
k = k.reshape(B, -1, h, d_k).transpose(1, 2)
v = v.reshape(B, -1, h, d_k).transpose(1, 2)
"""],
    ["""
q = q.view(B, L, h, d_k).permute(0, 2, 1, 3)
k = k.view(B, k.shape[1], h, d_k).permute(0, 2, 1, 3)
v = v.view(B, v.shape[1], h, d_k).permute(0, 2, 1, 3)
"""],
    ["""
def split(t: Tensor) -> Tensor:
    return t.view(B, -1, h, d_k).transpose(1, 2)
q, k, v = split(q), split(k), split(v)
"""],
    ["""
parts = []
for t in (q, k, v):
    parts.append(t.view(B, t.shape[1], h, d_k).transpose(1, 2))
q, k, v = parts
"""],
    ["""
split = lambda t: t.view(B, -1, h, d_k).transpose(1, 2)
q, k, v = [split(t) for t in (q, k, v)]
"""],
    ["""
q = (qh := q.view(B, L, h, d_k)).transpose(1, 2)
k = (kh := k.view(B, -1, h, d_k)).transpose(1, 2)
v = (vh := v.view(B, -1, h, d_k)).transpose(1, 2)
"""],
    ["""
η, δ = h, d_k
q = q.view(B, L, η, δ).transpose(1, 2)
k = k.view(B, -1, η, δ).transpose(1, 2)
v = v.view(B, -1, η, δ).transpose(1, 2)
"""],
    ["""
heads = []
for t in (q, k, v):
\theads.append(t.view(B, -1, h, d_k).transpose(1, 2))
q, k, v = heads
"""],
    ["""
assert {q.shape[-1], k.shape[-1], v.shape[-1]} == {h * d_k}, "each of Q, K, V holds h heads of d_k"
q = q.view(B, L, h, d_k).transpose(1, 2)
k = k.view(B, -1, h, d_k).transpose(1, 2)
v = v.view(B, -1, h, d_k).transpose(1, 2)
"""],
    ['''
"""(B, n, E) -> (B, n, h, d_k) -> (B, h, n, d_k), for Q, K and V."""
q_h: Tensor = q.view(B, L, h, d_k).transpose(1, 2)
k_h: Tensor = k.view(B, -1, h, d_k).transpose(1, 2)
v_h: Tensor = v.view(B, -1, h, d_k).transpose(1, 2)
q, k, v = q_h, k_h, v_h
'''],
]

MERGE_HEADS = [
    ["concat = heads.transpose(2, 1).reshape(B, L, E)"],
    ["concat = heads.permute(0, 2, 1, 3).reshape(B, L, h * d_k)"],
    ["""
def merge(t: Tensor) -> Tensor:
    return t.transpose(1, 2).reshape(B, L, E)
concat = merge(heads)
"""],
    ["""
pieces = []
for i in range(h):
    pieces.append(heads[:, i])
concat = cat(pieces, dim=-1)
"""],
    ["""
merge = lambda t: t.transpose(1, 2).reshape(B, L, E)
concat = [merge(t) for t in (heads,)][0]
"""],
    ["concat = (moved := heads.transpose(1, 2)).reshape(B, L, moved.shape[2] * moved.shape[3])"],
    ["""
χ = heads.transpose(1, 2)
concat = χ.reshape(B, L, E)
"""],
    ["""
moved = heads.transpose(1, 2)
if moved.shape[-1] * moved.shape[-2] == E:
\tconcat = moved.reshape(B, L, E)
else:
\traise ValueError("heads do not fill E")
"""],
    ["""
assert {heads.shape[1] * heads.shape[3]} == {E}, "h heads of d_k fill E"
concat = heads.transpose(1, 2).reshape(B, L, E)
"""],
    ['''
"""Concat(head_1, ..., head_h): (B, h, L, d_k) -> (B, L, h, d_k) -> (B, L, E)."""
moved: Tensor = heads.transpose(1, 2)
concat = moved.reshape(B, L, E)
'''],
]

ADAM_STEP = [
    ["""
m[...] = beta1 * m + (1 - beta1) * g
v[...] = beta2 * v + (1 - beta2) * g**2
""", """
m_hat = m / (1 - beta1**t)
v_hat = v / (1 - beta2**t)
p.array -= lr * m_hat / (np.sqrt(v_hat) + eps)
"""],
    ["""
np.multiply(m, beta1, out=m)
np.add(m, (1 - beta1) * g, out=m)
np.multiply(v, beta2, out=v)
np.add(v, (1 - beta2) * np.square(g), out=v)
""", """
step = lr / (1 - beta1**t)
p.array -= step * m / (np.sqrt(v) / math.sqrt(1 - beta2**t) + eps)
"""],
    ["""
def ema(avg: np.ndarray, new: np.ndarray, beta: float) -> None:
    avg *= beta
    avg += (1 - beta) * new
ema(m, g, beta1)
ema(v, g * g, beta2)
""", """
def corrected(avg: np.ndarray, beta: float) -> np.ndarray:
    return avg / (1 - beta**t)
p.array -= lr * corrected(m, beta1) / (np.sqrt(corrected(v, beta2)) + eps)
"""],
    ["""
flat_m, flat_v, flat_g = m.reshape(-1), v.reshape(-1), np.asarray(g).reshape(-1)
for i in range(flat_m.size):
    flat_m[i] = beta1 * flat_m[i] + (1 - beta1) * flat_g[i]
    flat_v[i] = beta2 * flat_v[i] + (1 - beta2) * flat_g[i] * flat_g[i]
""", """
update = np.empty_like(m)
flat_u, flat_m, flat_v = update.reshape(-1), m.reshape(-1), v.reshape(-1)
for i in range(flat_u.size):
    flat_u[i] = (flat_m[i] / (1 - beta1**t)) / (math.sqrt(flat_v[i] / (1 - beta2**t)) + eps)
p.array -= lr * update
"""],
    ["""
mix = lambda avg, new, beta: beta * avg + (1 - beta) * new
m[...] = mix(m, g, beta1)
v[...] = mix(v, g * g, beta2)
""", """
bias = [1 - beta**t for beta in (beta1, beta2)]
p.array -= lr * (m / bias[0]) / (np.sqrt(v / bias[1]) + eps)
"""],
    ["""
m *= beta1
m += (1 - beta1) * g
v *= beta2
v += (1 - beta2) * (g2 := g * g)
""", "p.array -= lr * (m / (bc1 := 1 - beta1**t)) / (np.sqrt(v / (bc2 := 1 - beta2**t)) + eps)"],
    ["""
β1, β2 = beta1, beta2
m *= β1
m += (1 - β1) * g
v *= β2
v += (1 - β2) * g * g
""", """
η, ε = lr, eps
p.array -= η * (m / (1 - β1**t)) / (np.sqrt(v / (1 - β2**t)) + ε)
"""],
    ["""
for avg, beta, new in ((m, beta1, g), (v, beta2, g * g)):
\tavg *= beta
\tavg += (1 - beta) * new
""", """
m_hat_scale = 1 / (1 - beta1**t)
denom = np.sqrt(v) / math.sqrt(1 - beta2**t) + eps
p.array -= lr * m_hat_scale * m / denom
"""],
    ["""
assert {0 <= beta1 < 1, 0 <= beta2 < 1} == {True}, "betas in [0, 1)"
m *= beta1
m += (1 - beta1) * g
v *= beta2
v += (1 - beta2) * g * g
""", """
before = p.array.copy()
p.array -= lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
assert np.all(np.abs(p.array - before) <= lr * 1.01 + 1e-12), "an Adam step moves a weight by about lr at most"
"""],
    ['''
"""The moments: m ← β₁ m + (1 − β₁) g, v ← β₂ v + (1 − β₂) g², in place."""
decay_m: float = beta1
decay_v: float = beta2
m *= decay_m
m += (1 - decay_m) * g
v *= decay_v
v += (1 - decay_v) * g * g
''', '''
"""The step: p ← p − lr m̂ / (√v̂ + ε), with the moments corrected for their start at zero."""
m_hat: np.ndarray = m / (1 - beta1**t)
v_hat: np.ndarray = v / (1 - beta2**t)
p.array -= lr * m_hat / (np.sqrt(v_hat) + eps)
'''],
]

LAYERNORM_BACKWARD = [
    ["""
x_hat, inv_std, weight = ctx.saved_tensors
batch = tuple(range(grad_output.ndim - 1))
grad_bias = np.sum(grad_output, axis=batch)
grad_weight = np.sum(grad_output * x_hat, axis=batch)
g = weight * grad_output
n = x_hat.shape[-1]
grad_x = inv_std / n * (n * g - g.sum(axis=-1, keepdims=True) - x_hat * (g * x_hat).sum(axis=-1, keepdims=True))
return grad_x, grad_weight, grad_bias
"""],
    ["""
x_hat, inv_std, weight = ctx.saved_tensors
rows_g = grad_output.reshape(-1, x_hat.shape[-1])
grad_weight = np.einsum("bi,bi->i", rows_g, x_hat.reshape(-1, x_hat.shape[-1]))
grad_bias = np.einsum("bi->i", rows_g)
g = grad_output * weight
mean_g = g.mean(axis=-1, keepdims=True)
mean_gx = np.einsum("...i,...i->...", g, x_hat)[..., None] / x_hat.shape[-1]
return (g - mean_g - x_hat * mean_gx) * inv_std, grad_weight, grad_bias
"""],
    ["""
def row_mean(t: np.ndarray) -> np.ndarray:
    return t.mean(axis=-1, keepdims=True)
def over_batch(t: np.ndarray) -> np.ndarray:
    return t.reshape(-1, t.shape[-1]).sum(axis=0)
x_hat, inv_std, weight = ctx.saved_tensors
g = grad_output * weight
grad_x = (g - row_mean(g) - x_hat * row_mean(g * x_hat)) * inv_std
return grad_x, over_batch(grad_output * x_hat), over_batch(grad_output)
"""],
    ["""
x_hat, inv_std, weight = ctx.saved_tensors
rows_x = x_hat.reshape(-1, x_hat.shape[-1])
rows_g = (grad_output * weight).reshape(-1, x_hat.shape[-1])
rows_s = np.broadcast_to(inv_std, x_hat.shape[:-1] + (1,)).reshape(-1, 1)
out = np.empty_like(rows_g)
for r in range(rows_g.shape[0]):
    g, xh = rows_g[r], rows_x[r]
    out[r] = (g - g.mean() - xh * (g * xh).mean()) * rows_s[r]
flat = grad_output.reshape(-1, x_hat.shape[-1])
grad_weight = np.zeros(x_hat.shape[-1])
grad_bias = np.zeros(x_hat.shape[-1])
for r in range(flat.shape[0]):
    grad_weight += flat[r] * rows_x[r]
    grad_bias += flat[r]
return out.reshape(x_hat.shape), grad_weight, grad_bias
"""],
    ["""
x_hat, inv_std, weight = ctx.saved_tensors
mean = lambda t: t.mean(axis=-1, keepdims=True)
batch = tuple([axis for axis in range(grad_output.ndim - 1)])
g = grad_output * weight
return (g - mean(g) - x_hat * mean(g * x_hat)) * inv_std, (grad_output * x_hat).sum(axis=batch), \\
    grad_output.sum(axis=batch)
"""],
    ["""
x_hat, inv_std, weight = ctx.saved_tensors
batch = tuple(range(grad_output.ndim - 1))
grad_x = ((g := grad_output * weight) - g.mean(axis=-1, keepdims=True)
          - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) * inv_std
return grad_x, (grad_output * x_hat).sum(axis=batch), grad_output.sum(axis=batch)
"""],
    ["""
ξ, ρ, γ = ctx.saved_tensors
batch = tuple(range(grad_output.ndim - 1))
δ = grad_output * γ
μ_δ = δ.mean(axis=-1, keepdims=True)
μ_δξ = (δ * ξ).mean(axis=-1, keepdims=True)
return (δ - μ_δ - ξ * μ_δξ) * ρ, (grad_output * ξ).sum(axis=batch), grad_output.sum(axis=batch)
"""],
    ["""
x_hat, inv_std, weight = ctx.saved_tensors
batch = tuple(range(grad_output.ndim - 1))
if batch:
\tgrad_weight = (grad_output * x_hat).sum(axis=batch)
\tgrad_bias = grad_output.sum(axis=batch)
else:
\tgrad_weight = grad_output * x_hat
\tgrad_bias = grad_output.copy()
g = grad_output * weight
grad_x = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) * inv_std
return grad_x, grad_weight, grad_bias
"""],
    ["""
x_hat, inv_std, weight = ctx.saved_tensors
batch = set(range(grad_output.ndim)) - {grad_output.ndim - 1}
g = grad_output * weight
grad_x = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) * inv_std
assert np.allclose(grad_x.sum(axis=-1), 0.0, atol=1e-6), "shifting every x of a row changes nothing"
return grad_x, (grad_output * x_hat).sum(axis=tuple(batch)), grad_output.sum(axis=tuple(batch))
"""],
    ['''
"""dx = (g − mean(g) − x̂ ⊙ mean(g ⊙ x̂)) / σ, with g = dy ⊙ γ; dγ, dβ summed over the batch."""
x_hat: np.ndarray
x_hat, inv_std, weight = ctx.saved_tensors
batch: tuple[int, ...] = tuple(range(grad_output.ndim - 1))
g: np.ndarray = grad_output * weight
centered: np.ndarray = g - g.mean(axis=-1, keepdims=True)
grad_x = (centered - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) * inv_std
return grad_x, (grad_output * x_hat).sum(axis=batch), grad_output.sum(axis=batch)
'''],
]

GELU_BACKWARD = [
    ["""
x, cdf = ctx.saved_tensors
pdf = np.exp(-x**2 / 2) / np.sqrt(2 * np.pi)
return (grad_output * cdf + grad_output * x * pdf,)
"""],
    ["""
x, cdf = ctx.saved_tensors
pdf = np.exp(-0.5 * np.square(x)) * (2 * np.pi) ** -0.5
return (grad_output * (cdf + x * pdf),)
"""],
    ["""
def density(z: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)
x, cdf = ctx.saved_tensors
return (grad_output * (cdf + x * density(x)),)
"""],
    ["""
x, cdf = ctx.saved_tensors
flat_x, flat_c, flat_g = x.reshape(-1), cdf.reshape(-1), grad_output.reshape(-1)
out = np.empty_like(flat_x)
root = np.sqrt(2.0 * np.pi)
for i in range(flat_x.size):
    out[i] = flat_g[i] * (flat_c[i] + flat_x[i] * np.exp(-0.5 * flat_x[i] * flat_x[i]) / root)
return (out.reshape(x.shape),)
"""],
    ["""
x, cdf = ctx.saved_tensors
phi = lambda z: np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)
return tuple([grad_output * (cdf + x * phi(x))])
"""],
    ["""
x, cdf = ctx.saved_tensors
return (grad_output * (cdf + x * (pdf := np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi))),)
"""],
    ["""
x, Φ = ctx.saved_tensors
φ = np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)
return (grad_output * (Φ + x * φ),)
"""],
    ["""
x, cdf = ctx.saved_tensors
if x.size:
\tpdf = np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)
else:
\tpdf = np.zeros_like(x)
return (grad_output * (cdf + x * pdf),)
"""],
    ["""
x, cdf = ctx.saved_tensors
kinds = {x.dtype, cdf.dtype}
pdf = np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)
assert len(kinds) == 1 and np.all(pdf <= 1 / np.sqrt(2.0 * np.pi)), "the normal density peaks at 1/√(2π)"
return (grad_output * (cdf + x * pdf),)
"""],
    ['''
"""d/dx [x Φ(x)] = Φ(x) + x φ(x)."""
x: np.ndarray
cdf: np.ndarray
x, cdf = ctx.saved_tensors
pdf: np.ndarray = np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)
return (grad_output * (cdf + x * pdf),)
'''],
]

ROPE = [
    ["""
n, d = x.shape[-2], x.shape[-1]
freqs = 1.0 / base ** (np.arange(0, d, 2) / d)
angles = np.outer(np.arange(n), freqs)
cos, sin = ta.tensor(np.cos(angles)), ta.tensor(np.sin(angles))
even, odd = x[..., 0::2], x[..., 1::2]
return ta.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).reshape(x.shape)
"""],
    ["""
n, d = x.shape[-2], x.shape[-1]
angles = np.arange(n)[:, None] * base ** (-np.arange(0, d, 2) / d)[None, :]
cos2 = ta.tensor(np.repeat(np.cos(angles), 2, axis=-1))
sin2 = ta.tensor(np.repeat(np.sin(angles), 2, axis=-1))
rotated_half = ta.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).reshape(x.shape)
return x * cos2 + rotated_half * sin2
"""],
    ["""
def rotate(a: ta.Tensor, b: ta.Tensor, c: ta.Tensor, s: ta.Tensor) -> tuple[ta.Tensor, ta.Tensor]:
    return a * c - b * s, a * s + b * c
n, d = x.shape[-2], x.shape[-1]
angles = np.arange(n)[:, None] * base ** (-np.arange(0, d, 2) / d)
first, second = rotate(x[..., 0::2], x[..., 1::2], ta.tensor(np.cos(angles)), ta.tensor(np.sin(angles)))
return ta.stack([first, second], dim=-1).reshape(x.shape)
"""],
    ["""
n, d = x.shape[-2], x.shape[-1]
angles = np.zeros((n, d // 2))
for m in range(n):
    for i in range(d // 2):
        angles[m, i] = m * base ** (-2 * i / d)
cos, sin = ta.tensor(np.cos(angles)), ta.tensor(np.sin(angles))
even, odd = x[..., 0::2], x[..., 1::2]
return ta.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).reshape(x.shape)
"""],
    ["""
n, d = x.shape[-2], x.shape[-1]
theta = np.array([base ** (-2 * i / d) for i in range(d // 2)])
table = lambda f: ta.tensor(f(np.arange(n)[:, None] * theta[None, :]))
cos, sin = table(np.cos), table(np.sin)
even, odd = x[..., 0::2], x[..., 1::2]
return ta.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).reshape(x.shape)
"""],
    ["""
n, d = (shape := x.shape)[-2], x.shape[-1]
angles = np.arange(n)[:, None] * (freqs := base ** (-np.arange(0, d, 2) / d))[None, :]
cos, sin = ta.tensor(np.cos(angles)), ta.tensor(np.sin(angles))
even, odd = x[..., 0::2], x[..., 1::2]
return ta.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).reshape(shape)
"""],
    ["""
n, d = x.shape[-2], x.shape[-1]
θ = base ** (-np.arange(0, d, 2) / d)
mθ = np.arange(n)[:, None] * θ[None, :]
cos, sin = ta.tensor(np.cos(mθ)), ta.tensor(np.sin(mθ))
even, odd = x[..., 0::2], x[..., 1::2]
return ta.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).reshape(x.shape)
"""],
    ["""
n, d = x.shape[-2], x.shape[-1]
if d % 2:
\traise ValueError(f"RoPE rotates pairs of features; d = {d} is odd")
angles = np.arange(n)[:, None] * base ** (-np.arange(0, d, 2) / d)
cos, sin = ta.tensor(np.cos(angles)), ta.tensor(np.sin(angles))
even, odd = x[..., 0::2], x[..., 1::2]
return ta.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).reshape(x.shape)
"""],
    ["""
n, d = x.shape[-2], x.shape[-1]
assert d % 2 == 0 and {d // 2} == {len(range(0, d, 2))}, "RoPE rotates pairs"
angles = np.arange(n)[:, None] * base ** (-np.arange(0, d, 2) / d)
assert np.allclose(np.cos(angles) ** 2 + np.sin(angles) ** 2, 1.0)
cos, sin = ta.tensor(np.cos(angles)), ta.tensor(np.sin(angles))
even, odd = x[..., 0::2], x[..., 1::2]
return ta.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).reshape(x.shape)
"""],
    ['''
"""Each pair (2i, 2i+1) of position m turned by the angle m θ_i, θ_i = base^(−2i/d)."""
n: int = x.shape[-2]
d: int = x.shape[-1]
angles: np.ndarray = np.arange(n)[:, None] * base ** (-np.arange(0, d, 2) / d)
cos, sin = ta.tensor(np.cos(angles)), ta.tensor(np.sin(angles))
even, odd = x[..., 0::2], x[..., 1::2]
return ta.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).reshape(x.shape)
'''],
]

SHIPPED = {"unbroadcast": UNBROADCAST, "matmul_backward": MATMUL_BACKWARD, "linear_forward": LINEAR_FORWARD,
           "shape_backward": SHAPE_BACKWARD, "softmax_backward": SOFTMAX_BACKWARD,
           "log_softmax_backward": LOG_SOFTMAX_BACKWARD, "attention": ATTENTION, "mha_split_heads": SPLIT_HEADS,
           "mha_merge_heads": MERGE_HEADS, "adam_step": ADAM_STEP}
EXAMPLE = {"layernorm_backward": LAYERNORM_BACKWARD, "gelu_backward": GELU_BACKWARD, "rope": ROPE}
