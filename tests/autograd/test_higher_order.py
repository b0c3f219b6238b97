"""Second derivatives checked without torch: ``gradgradcheck`` (finite differences of the gradient) on every op
with a backward, MultiheadAttention and FlashAttention included, each of which must fail when that op's second
derivative is planted wrong; and the refusals and options of a second pass. (Against torch: test_higher_order_torch.)"""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.autograd import higher_order
from tinyattn.autograd.core.function import AccumulateGrad, Function
from tinyattn.autograd.core.ops import elementwise
from tinyattn.nn import functional as F


def _setitem(lib, x):
    y = x * 1.0
    y[1] = x[0] * x[0]
    return y * y


def _index(lib, x):
    return (x * x)[lib.tensor([0, 0, 2])]


def _gather(lib, x):
    return (x * x).gather(1, lib.tensor([[0, 0], [1, 3], [3, 2]]))


def _in_place(lib, x):
    y = x * 1.5
    y.mul_(x)  # (Mul saved y's old value, its own input, and x: the second derivative computes on both)
    y.div_(x * x + 1)  # (and Div, y's value after mul_)
    return y * x


def _copy(lib, x):
    y = lib.zeros(3, 4, dtype=lib.float64)
    y.copy_(x * x)
    return y * x


# (name, function of (library, x)) for x of shape (3, 4); each composes the op with something non-linear where the op
# is itself linear, so that its second derivative is not zero everywhere
CASES = [
    ("add_sub_broadcast", lambda lib, x: (x * x + x[0]) - x[:, :1] * x[:, 1:2]),
    ("mul_div", lambda lib, x: x * x / (x * x + 1)),
    ("pow_tensor", lambda lib, x: (x * x + 1) ** (x * 0.5)),
    ("pow_scalar", lambda lib, x: x ** 3 + 2.0 ** x),
    ("neg_exp_log_sqrt", lambda lib, x: -(x.exp() + (x * x + 1).log() * (x * x + 2).sqrt())),
    ("tanh_sigmoid", lambda lib, x: x.tanh() * x.sigmoid()),
    ("sin_cos", lambda lib, x: x.sin() * x.cos() * x),
    ("relu_abs_clamp", lambda lib, x: x.relu() * x + x.abs() * x + x.clamp(-0.5, 0.7) * x),
    ("erf", lambda lib, x: lib.erf(x) * x),
    ("log1p_expm1", lambda lib, x: (x * x).log1p() * x.expm1()),
    ("gelu", lambda lib, x: lib.nn.functional.gelu(x)),
    ("gelu_tanh", lambda lib, x: lib.nn.functional.gelu(x, approximate="tanh")),
    ("masked_fill_where", lambda lib, x: x.masked_fill(x > 0.5, 2.0) * x + lib.where(x > 0, x * x, x.exp())),
    ("cast_clone", lambda lib, x: (x * x).float().double().clone() * x),
    ("shapes", lambda lib, x: (x * x).permute(1, 0).unsqueeze(0).expand(2, 4, 3).squeeze(0).reshape(2, 12)
     .transpose(0, 1) * x.reshape(12, 1)),
    ("slice", lambda lib, x: (x * x)[1:, ::2] * x[:2, 1::2]),
    ("index", _index),
    ("gather", _gather),
    ("tril_triu", lambda lib, x: (x * x).tril() + (x * x * x).triu(1)),
    ("cat_stack", lambda lib, x: lib.cat([x, x * x], 1).sum(1) * lib.stack([x.exp(), x], 0).sum((0, 2))),
    ("setitem", _setitem),
    ("copy", _copy),
    ("in_place_on_its_own_input", _in_place),
    ("sum_mean", lambda lib, x: (x * x).sum(0) * x.mean(1, keepdim=True)),
    ("amax_max", lambda lib, x: (x * x).amax(1) + (x * x * x).max(0).values.sum()),
    ("var_std", lambda lib, x: x.var(1) + x.std(0).sum()),
    ("norm", lambda lib, x: x.norm(dim=1) + x.norm()),
    ("matmul", lambda lib, x: (x @ x.T) @ x + (x[0] @ x.T)[:, None] + (x @ x[1])[:, None] + x[1] @ x[2]),
    ("linear", lambda lib, x: lib.nn.functional.linear(x, x[:2] * x[:2], x[0, :2])),
    ("einsum", lambda lib, x: lib.einsum("ij,kj->ik", x, x * x) @ x + lib.einsum("ij->j", x * x)),
    ("softmax_log_softmax", lambda lib, x: x.softmax(-1) * x + x.log_softmax(0)),
]


@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_gradgradcheck_passes(name, fn):
    rng = np.random.default_rng(sum(map(ord, name)) + 1)
    x = ta.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    # (a round trip through float32 is exact to float32's precision only: finite differences need a wider step)
    tolerance = dict(eps=1e-3, atol=1e-3, rtol=1e-2) if name == "cast_clone" else {}
    assert ta.autograd.gradgradcheck(lambda t: fn(ta, t), [x], **tolerance)


def test_the_cases_cover_every_op():
    """Each op with a backward is in some case's graph (a new op must join the table above)."""
    seen = set(CASE_OF_OP)  # (the ops of every case's graph: below)
    ops = {cls for module in (elementwise,) + _op_modules() for cls in vars(module).values()
           if isinstance(cls, type) and issubclass(cls, Function) and cls.__module__ == module.__name__
           and cls.forward is not Function.forward  # (a shared base with no forward of its own is not an op...
           and cls is not elementwise.Elementwise}  # ...nor the base of the elementwise ops)
    assert ops - seen - {op for _, op in elementwise.named_ops()} == set()  # (those: test_elementwise_named_torch.py)


def test_every_op_that_saves_its_output_says_where(monkeypatch):
    """``saved_output`` names where forward saved its output, in every op of the cases that saves it, and is None in
    every other (a recorded backward reads that array as the output): a new op that saves its output must say so."""
    apply, found = Function.apply.__func__, {}

    def watching(cls, *args, **kwargs):
        result = apply(cls, *args, **kwargs)
        if result.grad_fn is not None and result.grad_fn.fn is cls and cls.composed is None:  # (fused: the twin)
            inputs = [a.array for a in args if isinstance(a, ta.Tensor)]
            saved = result.grad_fn.ctx.saved_tensors
            # (a 0-d result: forward returned a NumPy scalar, which apply wrapped in a new 0-d array)
            output = [i for i, s in enumerate(saved) if not any(s is a for a in inputs) and (
                s is result.array or isinstance(s, np.generic) and s.shape == result.shape and s == result.array)]
            found.setdefault(cls, set()).add(tuple(output))
        return result

    monkeypatch.setattr(Function, "apply", classmethod(watching))
    rng = np.random.default_rng(1)
    for _, fn in CASES:
        fn(ta, ta.tensor(rng.standard_normal((3, 4)), requires_grad=True))
    assert {cls: ((cls.saved_output,) if cls.saved_output is not None else ()) for cls in found} == {
        cls: positions.pop() for cls, positions in found.items() if len(positions) == 1}
    assert sum(cls.saved_output is not None for cls in found) >= 8  # (exp, sqrt, tanh, sigmoid, pow, norm, softmax...)


def _op_modules():
    from tinyattn.autograd.core.ops import flash_attention, matmul, reduction, shape, softmax
    return (flash_attention, matmul, reduction, shape, softmax)


def _attention_ops(x):
    q = x.reshape(1, 3, 4)
    out = F.scaled_dot_product_attention(q, q * q, q.exp())
    packed = F.packed_attention(ta.stack([q, q * q, q.exp()]))
    return out + packed


def test_gradgradcheck_catches_a_planted_wrong_second_derivative(monkeypatch):
    """Planted: tanh's backward computed from its output as a constant (detached). Its value, the first derivative,
    is still right, so gradcheck passes; its own derivative misses how the output depends on x."""
    x = ta.tensor(np.random.default_rng(2).standard_normal(5), requires_grad=True)
    assert ta.autograd.gradgradcheck(lambda t: t.tanh(), [x])

    def detached(ctx, grad_output):
        (out,) = ctx.saved_tensors
        constant = out.detach().numpy() if isinstance(out, ta.Tensor) else out
        return (grad_output * (1 - constant * constant),)

    monkeypatch.setattr(elementwise.Tanh, "backward", staticmethod(detached))
    assert ta.autograd.gradcheck(lambda t: t.tanh(), [x])  # the first derivative is still right...
    with pytest.raises(ta.autograd.GradcheckError, match="the gradient of"):
        ta.autograd.gradgradcheck(lambda t: t.tanh(), [x])  # ...its derivative is not


def test_dropout_in_flash_attention_refuses_a_second_derivative_clearly():
    q = ta.tensor(np.ones((1, 3, 4)), requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    (g,) = ta.autograd.grad(out.sum(), q, retain_graph=True)
    assert g.shape == q.shape
    with pytest.raises(RuntimeError, match="dropout_p > 0 cannot be differentiated twice"):
        ta.autograd.grad(out.sum(), q, create_graph=True)


def test_a_backward_computed_outside_the_recorded_ops_is_refused_under_create_graph(monkeypatch):
    """Planted: tanh's backward returns a NumPy array even when handed Tensors. Its derivative cannot be taken,
    so create_graph=True refuses, naming the op, rather than treating the gradient as a constant."""
    def on_arrays_only(ctx, grad_output):
        (out,) = ctx.saved_tensors
        out, g = (np.asarray(t.detach().numpy() if isinstance(t, ta.Tensor) else t) for t in (out, grad_output))
        return (g * (1 - out * out),)

    monkeypatch.setattr(elementwise.Tanh, "backward", staticmethod(on_arrays_only))
    x = ta.tensor(np.linspace(-1, 1, 4), requires_grad=True)
    (g,) = ta.autograd.grad(x.tanh().sum(), x)  # (the first derivative is fine)
    np.testing.assert_allclose(g.numpy(), 1 - np.tanh(x.detach().numpy()) ** 2)
    with pytest.raises(RuntimeError, match="Tanh.backward returned a ndarray, not a Tensor, with create_graph"):
        ta.autograd.grad(x.tanh().sum(), x, create_graph=True)


class _WrongLinear(Function):
    """Planted: a linear op (y = 2x) whose backward is not its forward's transpose (3 dy instead of 2 dy)."""

    on_arrays, linear = True, True  # (an op like tinyattn's own: its second derivative is its forward)

    @staticmethod
    def forward(ctx, x):
        return 2.0 * x

    @staticmethod
    def backward(ctx, grad_output):
        return 3.0 * grad_output


def _planted_tanh(monkeypatch, kept=0.0):
    """Tanh's backward with a share ``1 - kept`` of its output's dependence on x cut (detached)."""
    def partly_detached(ctx, grad_output):
        (out,) = ctx.saved_tensors
        if isinstance(out, ta.Tensor):
            out = out * kept + out.detach() * (1 - kept)
        return (grad_output * (1 - out * out),)

    monkeypatch.setattr(elementwise.Tanh, "backward", staticmethod(partly_detached))


X5 = np.random.default_rng(4).standard_normal(5)


def test_gradgradcheck_checks_the_derivative_with_respect_to_the_output_gradient():
    """A linear op's gradient depends on the output gradient alone: only the check with respect to it (the
    random grad_outputs, which require grad) sees a backward that is not its forward's transpose."""
    x = ta.tensor(X5, requires_grad=True)
    assert ta.autograd.gradgradcheck(lambda t: t.reshape(5, 1).T * 3.0, [x])  # (a right linear op passes)
    with pytest.raises(ta.autograd.GradcheckError):
        ta.autograd.gradgradcheck(lambda t: _WrongLinear.apply(t), [x])


def test_gradgradcheck_takes_one_tensor_numbers_and_given_grad_outputs():
    x = ta.tensor(X5, requires_grad=True)
    assert ta.autograd.gradgradcheck(lambda t: (t * t).tanh(), x)  # (one Tensor, not a sequence)
    assert ta.autograd.gradgradcheck(lambda t, s: (t * s).sin(), [x, 2.0])  # (a Python number among the inputs)
    r = ta.tensor(np.random.default_rng(5).standard_normal(5), requires_grad=True)
    assert ta.autograd.gradgradcheck(lambda t: (t * t).tanh(), [x], r)  # (one Tensor as grad_outputs)


def test_gradgradcheck_checks_every_output(monkeypatch):
    """The planted wrong second derivative in the second of two outputs is caught too."""
    x = ta.tensor(X5, requires_grad=True)
    assert ta.autograd.gradgradcheck(lambda t: (t.sin(), t.tanh()), [x])
    _planted_tanh(monkeypatch)
    with pytest.raises(ta.autograd.GradcheckError):
        ta.autograd.gradgradcheck(lambda t: (t.sin(), t.tanh()), [x])


def test_gradgradcheck_passes_its_tolerances_step_and_raise_exception_on(monkeypatch):
    x = ta.tensor(X5, requires_grad=True)
    assert ta.autograd.gradgradcheck(lambda t: t.tanh(), [x])
    assert not ta.autograd.gradgradcheck(lambda t: t.tanh(), [x], eps=0.5, raise_exception=False)  # (too coarse)
    _planted_tanh(monkeypatch, kept=0.99)  # (a second derivative 1% wrong)
    assert not ta.autograd.gradgradcheck(lambda t: t.tanh(), [x], raise_exception=False)
    assert ta.autograd.gradgradcheck(lambda t: t.tanh(), [x], atol=1.0, rtol=0.0)
    assert ta.autograd.gradgradcheck(lambda t: t.tanh(), [x], atol=0.0, rtol=0.5)


def test_materialized_gradient_of_an_unused_input_has_its_dtype():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    unused = ta.tensor([3.0], dtype=ta.float32, requires_grad=True)
    zeros = ta.autograd.grad((x * x).sum(), [x, unused], materialize_grads=True)[1]
    assert zeros.dtype == ta.float32 and zeros.shape == (1,)


def _ops_in(out):
    """The ops in ``out``'s graph."""
    seen, stack, visited = set(), [out.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is not None and node not in visited:
            visited.add(node)
            seen.add(node.fn)
            stack.extend(node.edges)
    return seen


def _case_of_each_op():
    """``{op: (case name, function)}``: for each op with a backward, the first case whose graph holds it."""
    rng = np.random.default_rng(0)
    found = {}
    for name, fn in CASES + [("attention", lambda lib, x: _attention_ops(x))]:
        for op in _ops_in(fn(ta, ta.tensor(rng.standard_normal((3, 4)), requires_grad=True))):
            if op is not AccumulateGrad:  # (a leaf's sink: no inputs, no gradient to send on)
                found.setdefault(op, (name, fn))
    return found


CASE_OF_OP = _case_of_each_op()


@pytest.mark.parametrize("op", sorted(CASE_OF_OP, key=lambda op: op.__name__), ids=lambda op: op.__name__)
def test_gradgradcheck_fails_for_a_planted_wrong_second_derivative_of_each_op(op, monkeypatch):
    """Planted in the op's recorded backward: each gradient times ``1 + (s - s.detach())``, for ``s`` a fixed
    random weighting of the op's output gradient. Its value is unchanged (the first derivative stays right);
    its derivative with respect to the output gradient gains a term, which the finite differences do not see."""
    name, fn = CASE_OF_OP[op]
    record = higher_order.backward_graph

    def planted(node, grad_output):
        grads = record(node, grad_output)
        if node.fn is not op:
            return grads
        weights = np.random.default_rng(1).standard_normal(grad_output.shape)
        s = (grad_output * ta.tensor(weights, dtype=grad_output.dtype)).sum()
        wrong = 1 + (s - s.detach())
        return tuple(None if g is None else g * wrong.to(g.dtype) for g in grads)

    x = ta.tensor(np.random.default_rng(sum(map(ord, name)) + 1).standard_normal((3, 4)), requires_grad=True)
    tolerance = dict(eps=1e-3, atol=1e-3, rtol=1e-2) if name == "cast_clone" else {}
    call = lambda t: _attention_ops(t) if name == "attention" else fn(ta, t)  # noqa: E731
    assert ta.autograd.gradcheck(call, [x], **tolerance)
    monkeypatch.setattr(higher_order, "backward_graph", planted)
    assert ta.autograd.gradcheck(call, [x], **tolerance)  # (the first derivative is still right...)
    assert not ta.autograd.gradgradcheck(call, [x], raise_exception=False, **tolerance)  # (...its derivative not)


def test_gradgradcheck_passes_through_the_attention_ops():
    x = ta.tensor(np.random.default_rng(3).standard_normal((3, 4)), requires_grad=True)
    assert ta.autograd.gradgradcheck(_attention_ops, [x])


@pytest.mark.parametrize("block_size, causal, mask", [(128, False, None), (2, False, None), (2, True, None),
                                                       (2, False, "float"), (3, False, "bool")],
                         ids=lambda c: str(c))
def test_gradgradcheck_passes_through_flash_attention(block_size, causal, mask):
    """One key block and several, causal, a float or bool mask: with respect to Q, K and V at once."""
    rng = np.random.default_rng(block_size + causal)
    q, k, v = (ta.tensor(rng.standard_normal(s), requires_grad=True) for s in [(2, 5, 4), (2, 5, 4), (2, 5, 3)])
    masks = {None: None, "float": ta.tensor(rng.standard_normal((5, 5))), "bool": ta.tensor(rng.random((1, 5)) < 0.7)}
    if mask == "bool":
        masks["bool"].array[0, 0] = True  # (every query sees a key)

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, masks[mask], is_causal=causal, block_size=block_size)

    assert ta.autograd.gradgradcheck(attend, [q, k, v])


@pytest.mark.parametrize("need_weights", [True, False], ids=["composed", "fused"])
def test_gradgradcheck_passes_through_multihead_attention(need_weights):
    """With respect to the input and every weight, on the composed path and the fused (FlashAttention) one, with a
    key padding mask."""
    ta.manual_seed(6)
    mha = ta.nn.MultiheadAttention(4, 2, batch_first=True, dtype=ta.float64)
    x = ta.tensor(np.random.default_rng(6).standard_normal((2, 3, 4)), requires_grad=True)
    padding = ta.tensor(np.array([[False, False, True], [False, False, False]]))

    def attend(x, *weights):  # (the weights are the module's own: gradgradcheck perturbs them in place)
        out, _ = mha(x, x, x, key_padding_mask=padding, need_weights=need_weights)
        return out

    assert ta.autograd.gradgradcheck(attend, [x, *mha.parameters()])
