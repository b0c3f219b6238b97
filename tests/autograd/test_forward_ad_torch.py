"""Forward-mode AD against torch's ``autograd.forward_ad`` in float64: every op's jvp (the cases of
test_higher_order, which cover every op), attention by both paths and MultiheadAttention, forward over reverse
(Hessian-vector products), in-place changes. (Without torch: test_forward_ad.py.)"""

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.autograd.forward_ad as fwAD

from .test_higher_order import CASES

torch = pytest.importorskip("torch")
import torch.autograd.forward_ad as torch_fwAD  # noqa: E402

pytestmark = pytest.mark.torch

TOL = dict(rtol=1e-8, atol=1e-10)
FORWARD_AD = {ta: fwAD, torch: torch_fwAD}


def _numpy(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _jvp(lib, fn, primals, tangents):
    """``fn``'s value and its tangent, each input made dual with its tangent: the same program in either library."""
    fw = FORWARD_AD[lib]
    with fw.dual_level():
        duals = [fw.make_dual(lib.tensor(p), lib.tensor(t)) for p, t in zip(primals, tangents)]
        out = fn(lib, *duals)
        outs = out if isinstance(out, tuple) else (out,)
        return [(_numpy(fw.unpack_dual(o).primal), _numpy(fw.unpack_dual(o).tangent)) for o in outs]


def _assert_jvps_match(lib_fn, primals, tangents):
    for (value, tangent), (their_value, their_tangent) in zip(_jvp(ta, lib_fn, primals, tangents),
                                                              _jvp(torch, lib_fn, primals, tangents)):
        np.testing.assert_allclose(value, their_value, **TOL)
        np.testing.assert_allclose(tangent, their_tangent, **TOL)


@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_every_ops_jvp_matches_torch(name, fn):
    rng = np.random.default_rng(sum(map(ord, name)) + 11)
    _assert_jvps_match(fn, [rng.standard_normal((3, 4))], [rng.standard_normal((3, 4))])


@pytest.mark.parametrize("causal, heads_kv, mask", [(False, 2, None), (True, 2, None), (False, 1, None),
                                                    (False, 2, "float"), (False, 2, "bool")], ids=str)
def test_scaled_dot_product_attention_jvp_matches_torch(causal, heads_kv, mask):
    """The fused op (FlashAttention): causal, grouped K/V heads, a float mask with a tangent of its own, a bool mask."""
    rng = np.random.default_rng(heads_kv + 2 * causal + len(str(mask)))
    shapes = [(2, 2, 5, 4), (2, heads_kv, 6, 4), (2, heads_kv, 6, 3)] + ([(5, 6)] if mask == "float" else [])
    primals = [rng.standard_normal(s) for s in shapes]
    tangents = [rng.standard_normal(s) for s in shapes]
    bool_mask = rng.standard_normal((5, 6)) > -0.5

    def attention(lib, q, k, v, *float_mask):
        m = float_mask[0] if float_mask else lib.tensor(bool_mask) if mask == "bool" else None
        return lib.nn.functional.scaled_dot_product_attention(q, k, v, m, is_causal=causal,
                                                              enable_gqa=heads_kv != 2)

    _assert_jvps_match(attention, primals, tangents)


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_multihead_attention_jvp_matches_torch(need_weights, masked):
    """Both of tinyattn's paths (packed FlashAttention; composed ops with the weights), against torch's, with a
    tangent on the input and on every parameter (each parameter a dual, through ``func.functional_call``)."""
    rng = np.random.default_rng(7 + masked)
    ours = ta.nn.MultiheadAttention(8, 2, batch_first=True, dtype=ta.float64)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    state = {k: v.numpy() for k, v in ours.state_dict().items()}
    theirs.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    names = sorted(state)
    padding = np.array([[False, False, False, True, True], [False, False, False, False, True]])
    attn = rng.standard_normal((5, 5))
    primals = [rng.standard_normal((2, 5, 8))] + [state[n] for n in names]
    tangents = [rng.standard_normal(p.shape) for p in primals]

    def run(lib, x, *params):
        module, func = (ours, ta.func) if lib is ta else (theirs, torch.func)
        masks = dict(key_padding_mask=lib.tensor(padding), attn_mask=lib.tensor(attn)) if masked else {}
        # (torch's fused path has no forward AD, "not implemented yet": its composed one is the reference for both)
        options = dict(need_weights=need_weights or lib is torch, **masks)
        out, weights = func.functional_call(module, dict(zip(names, params)), (x, x, x), options)
        return (out, weights) if need_weights else out

    _assert_jvps_match(run, primals, tangents)


def test_forward_over_reverse_matches_torch():
    """A gradient taken with create_graph inside a dual level: its tangent is the Hessian-vector product."""
    rng = np.random.default_rng(3)
    data, v, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.standard_normal((4, 2))

    def hvp(lib):
        fw = FORWARD_AD[lib]
        with fw.dual_level():
            x = fw.make_dual(lib.tensor(data, requires_grad=True), lib.tensor(v))
            loss = ((x @ lib.tensor(w)).tanh().softmax(-1) * x[:, :2].exp()).sum() + x.norm()
            (g,) = lib.autograd.grad(loss, x, create_graph=True)
            return _numpy(fw.unpack_dual(g).tangent)

    np.testing.assert_allclose(hvp(ta), hvp(torch), **TOL)


def test_in_place_changes_carry_tangents_as_torch():
    rng = np.random.default_rng(9)
    a, ta_, b, tb = (rng.standard_normal((2, 3)) for _ in range(4))

    def program(lib, x, y):
        z = x * 1.0
        z.mul_(y)
        z.add_(x.exp())
        z[0] = y[1] * 2.0
        w = y.clone()
        w.copy_(z.tanh())
        return z, w

    _assert_jvps_match(program, [a, b], [ta_, tb])


def test_refusals_match_torchs_messages():
    for lib, fw in FORWARD_AD.items():
        with pytest.raises(RuntimeError, match="no level exists"):
            fw.make_dual(lib.tensor([1.0]), lib.tensor([1.0]))
        with fw.dual_level():
            with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
                fw.enter_dual_level()
            with pytest.raises(RuntimeError, match=r"size \[2\] while the given forward gradient is of size \[1\]"):
                fw.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0]))
            with pytest.raises(ValueError, match="Expected primal to be floating point"):
                fw.make_dual(lib.tensor([1, 2]), lib.tensor([1.0, 2.0]))


def _cube(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            ctx.k = k
            return x ** 3 * k, x.sin()

        @staticmethod
        def backward(ctx, g1, g2):
            (x,) = ctx.saved_tensors
            return g1 * 3 * x ** 2 * ctx.k + g2 * x.cos(), None

        @staticmethod
        def jvp(ctx, tx, tk):
            (x,) = ctx.saved_tensors
            return tx * 3 * x ** 2 * ctx.k, tx * x.cos()

    return Cube


@pytest.mark.parametrize("requires_grad", [False, True])
def test_a_custom_functions_jvp_is_called_as_torch_calls_it(requires_grad):
    """Recorded (an input requires grad) or not, each output's tangent is the user's jvp's; without a jvp, refused."""
    rng = np.random.default_rng(12)
    data, tangent = rng.standard_normal(4), rng.standard_normal(4)
    results = []
    for lib, fw in FORWARD_AD.items():
        with fw.dual_level():
            x = fw.make_dual(lib.tensor(data, requires_grad=requires_grad), lib.tensor(tangent))
            results.append([_numpy(fw.unpack_dual(o).tangent) for o in _cube(lib).apply(x, 2.0)])

            class NoJvp(lib.autograd.Function):
                @staticmethod
                def forward(ctx, t):
                    return t * 2

                @staticmethod
                def backward(ctx, g):
                    return g * 2

            with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
                NoJvp.apply(x)
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, **TOL)
