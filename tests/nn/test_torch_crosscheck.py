"""nn against torch in float64: MultiheadAttention over a grid of options (outputs, attention
weights, and the gradients of the inputs and of every parameter), SDPA, layers and losses."""

import itertools

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.nn import functional as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

E, H, L, S, B = 8, 2, 3, 4, 2


def torch_mha_like(ours, **options):
    """A torch MHA with the same options, loaded with our weights through state_dict."""
    theirs = torch.nn.MultiheadAttention(E, H, dtype=torch.float64, **options)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    return theirs


def make_masks(kind, batched, rng, L=L):
    """(key_padding_mask, attn_mask) as NumPy arrays for ``L`` queries; no query is left without keys."""
    padding = np.zeros((B, S), dtype=bool)
    padding[0, -1] = padding[1, -2:] = True
    if not batched:
        padding = padding[0]
    blocked = rng.random((L, S)) > 0.6
    blocked[:, 0] = False
    heads = B * H if batched else H
    blocked3 = (rng.random((heads, L, S)) > 0.6) & np.arange(S).astype(bool)
    return {
        "none": (None, None),
        "attn_bool": (None, blocked),
        "attn_float": (None, rng.standard_normal((L, S))),
        "attn_bool_3d": (None, blocked3),
        "attn_float_3d": (None, rng.standard_normal((heads, L, S))),
        "padding_bool": (padding, None),
        "padding_float": (np.where(padding, -np.inf, 0.0), None),
        "padding_and_attn_bool": (padding, blocked),
    }[kind]


def run_both(options, mask_kind, need_weights=True, average=True, batched=True, seed=0, self_attention=False):
    rng = np.random.default_rng(seed)
    ta.manual_seed(seed)
    ours = nn.MultiheadAttention(E, H, dtype=ta.float64, **options)
    for name, p in ours.named_parameters():  # non-zero biases
        if "bias" in name:
            p.array[...] = rng.standard_normal(p.shape)
    theirs = torch_mha_like(ours, **options)
    kdim, vdim = options.get("kdim") or E, options.get("vdim") or E
    first = options.get("batch_first", False)
    shape = (lambda n, d: (B, n, d) if first else (n, B, d)) if batched else (lambda n, d: (n, d))
    arrays = [rng.standard_normal(shape(n, d)) for n, d in ((L, E), (S, kdim), (S, vdim))]
    if self_attention:  # one tensor is query, key and value: S of them
        arrays = arrays[1:2]
    padding, attn = make_masks(mask_kind, batched, rng, S if self_attention else L)
    results = []
    for lib, module in ((ta, ours), (torch, theirs)):
        inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
        if self_attention:
            inputs *= 3  # the very same tensor
        kwargs = {"need_weights": need_weights, "average_attn_weights": average}
        if padding is not None:
            kwargs["key_padding_mask"] = lib.tensor(padding)
        if attn is not None:
            kwargs["attn_mask"] = lib.tensor(attn)
        out, w = module(*inputs, **kwargs)
        loss = (out * lib.tensor(np.random.default_rng(7).standard_normal(out.shape))).sum()
        if w is not None:
            loss = loss + (w * lib.tensor(np.random.default_rng(8).standard_normal(w.shape))).sum()
        loss.backward()
        grads = {f"input{i}": np.asarray(t.grad) for i, t in enumerate(inputs)}
        grads.update({n: np.asarray(p.grad) for n, p in module.named_parameters()})
        results.append((np.asarray(out.detach()), None if w is None else np.asarray(w.detach()), grads))
    (o1, w1, g1), (o2, w2, g2) = results
    np.testing.assert_allclose(o1, o2, rtol=1e-9, atol=1e-12, err_msg="attn_output")
    assert (w1 is None) == (w2 is None)
    if w1 is not None:
        np.testing.assert_allclose(w1, w2, rtol=1e-9, atol=1e-12, err_msg="attn_weights")
    assert g1.keys() == g2.keys()
    for name in g1:
        np.testing.assert_allclose(g1[name], g2[name], rtol=1e-8, atol=1e-11, err_msg=f"grad of {name}")


BASE = [
    dict(batch_first=bf, bias=bias, **dims)
    for bf, bias, dims in itertools.product((False, True), (True, False), ({}, {"kdim": 3, "vdim": 5}))
]
MASKS = ["none", "attn_bool", "attn_float", "attn_bool_3d", "attn_float_3d", "padding_bool", "padding_float",
         "padding_and_attn_bool"]
GRID = [(opts, mask, i % 2 == 0, i % 3 != 0) for i, (opts, mask) in enumerate(itertools.product(BASE, MASKS))]


@pytest.mark.parametrize("options,mask,need_weights,average", GRID, ids=lambda v: repr(v).replace(" ", ""))
def test_mha_grid_matches_torch(options, mask, need_weights, average):
    run_both(options, mask, need_weights, average)


@pytest.mark.parametrize("options", [{"add_bias_kv": True}, {"add_zero_attn": True},
                                     {"add_bias_kv": True, "add_zero_attn": True, "batch_first": True}], ids=repr)
@pytest.mark.parametrize("mask", ["none", "attn_bool", "padding_and_attn_bool", "attn_float_3d"])
def test_mha_bias_kv_zero_attn_match_torch(options, mask):
    run_both(options, mask, average=False)


SELF_GRID = [(dict(batch_first=bf, bias=bias, **extra), mask, batched)
             for i, (bf, bias, extra, mask, batched) in enumerate(itertools.product(
                 (False, True), (True, False), ({}, {"add_bias_kv": True}, {"add_zero_attn": True}),
                 ["none", "attn_bool", "attn_float_3d", "padding_and_attn_bool"], (True, False)))
             if batched or (i % 2 == 0 and "3d" not in mask)]


@pytest.mark.parametrize("options,mask,batched", SELF_GRID, ids=lambda v: repr(v).replace(" ", ""))
@pytest.mark.parametrize("need_weights", [False, True])
def test_mha_self_attention_matches_torch(options, mask, batched, need_weights):
    """One tensor as query, key and value: with need_weights=False the in-projection is one packed product."""
    run_both(options, mask, need_weights, batched=batched, self_attention=True)


@pytest.mark.parametrize("mask", ["none", "attn_bool", "attn_float_3d", "padding_bool"])
@pytest.mark.parametrize("average", [True, False])
def test_mha_unbatched_matches_torch(mask, average):
    run_both({}, mask, average=average, batched=False)


def test_state_dict_round_trip_through_torch():
    ours = nn.MultiheadAttention(E, H, add_bias_kv=True, kdim=3, vdim=5)
    theirs = torch.nn.MultiheadAttention(E, H, add_bias_kv=True, kdim=3, vdim=5)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    back = nn.MultiheadAttention(E, H, add_bias_kv=True, kdim=3, vdim=5)
    back.load_state_dict(theirs.state_dict())  # torch tensors straight in
    for (n1, a), (n2, b) in zip(ours.state_dict().items(), back.state_dict().items()):
        assert n1 == n2 and a.dtype == b.dtype == np.float32
        np.testing.assert_array_equal(a, b)


def test_init_statistics_match_torch():
    ours = nn.MultiheadAttention(64, 4)
    theirs = torch.nn.MultiheadAttention(64, 4)
    for name, p in ours.named_parameters():
        t = dict(theirs.named_parameters())[name].detach().numpy()
        assert p.shape == t.shape, name
        assert abs(np.abs(p.array).max() - np.abs(t).max()) < 0.05, name
        assert abs(p.array.std() - t.std()) < 0.02, name


@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "causal"])
def test_sdpa_matches_torch(mask_kind):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((2, H, L, 4)), rng.standard_normal((2, H, S, 4)), rng.standard_normal((2, H, S, 5))]
    allowed = rng.random((L, S)) > 0.4
    allowed[:, 0] = True
    kwargs = {"none": {}, "bool": {"attn_mask": allowed}, "float": {"attn_mask": rng.standard_normal((L, S))},
              "causal": {"is_causal": True}}[mask_kind]
    upstream = rng.standard_normal((2, H, L, 5))
    got = []
    for lib, sdpa in ((ta, F.scaled_dot_product_attention), (torch, torch.nn.functional.scaled_dot_product_attention)):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        kw = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        out = sdpa(*ts, **kw)
        out.backward(lib.tensor(upstream))
        got.append([np.asarray(out.detach())] + [np.asarray(t.grad) for t in ts])
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def random_sdpa_case(rng):
    """Seeded SDPA arguments: 3-D or 4-D inputs, GQA, masks of every broadcast shape (bool or float, the
    float one sometimes requiring grad), causal, scale, a query row with huge scores, float32 or float64."""
    batch, kv_heads, group = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.choice([1, 1, 2]))
    n_q, n_k = int(rng.integers(1, 7)), int(rng.integers(1, 9))
    d, d_v = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    q_heads = kv_heads * group
    lead_q, lead_k = ((q_heads,), (kv_heads,)) if rng.integers(3) == 0 else ((batch, q_heads), (batch, kv_heads))
    arrays = [rng.standard_normal(lead_q + (n_q, d)), rng.standard_normal(lead_k + (n_k, d)),
              rng.standard_normal(lead_k + (n_k, d_v))]
    if rng.integers(3) == 0:  # scores of ~±1000 in one row: each row needs its own running max
        arrays[0][..., 0, :] *= 400 / max(np.abs(arrays[0][..., 0, :]).max(), 1e-3)
    kwargs = {"enable_gqa": group > 1}
    kind = rng.choice(["none", "bool", "float", "causal"])
    mask_shapes = [(n_q, n_k), (n_q, 1), (1, n_k), lead_q + (n_q, n_k), lead_q[:-1] + (1, 1, n_k)]
    shape = mask_shapes[rng.integers(len(mask_shapes))]
    if kind == "bool":
        allowed = rng.random(shape) > 0.4
        allowed[..., 0] = True  # torch gives NaN for a query that sees no key
        kwargs["attn_mask"] = allowed
    elif kind == "float":
        kwargs["attn_mask"] = rng.standard_normal(shape)
    elif kind == "causal" and n_k >= n_q:
        kwargs["is_causal"] = True
    if rng.integers(2):
        kwargs["scale"] = float(rng.uniform(0.1, 2.0))
    needs = [bool(rng.integers(2)) for _ in range(3)]
    needs[rng.integers(3)] = True  # at least one of query, key, value
    mask_needs = kind == "float" and bool(rng.integers(2))
    dtype = np.float32 if rng.integers(4) == 0 else np.float64
    return arrays, kwargs, needs, mask_needs, dtype, rng.standard_normal(lead_q + (n_q, d_v))


@pytest.mark.parametrize("seed", range(40))
def test_sdpa_random_cases_match_torch(seed):
    """FlashAttention against torch over random cases (``random_sdpa_case``): values, dtypes and every gradient."""
    rng = np.random.default_rng(seed)
    arrays, kwargs, needs, mask_needs, dtype, upstream = random_sdpa_case(rng)
    block_size = int(rng.integers(1, 5))
    got = []
    for lib, sdpa in ((ta, F.scaled_dot_product_attention), (torch, torch.nn.functional.scaled_dot_product_attention)):
        ts = [lib.tensor(a.astype(dtype), requires_grad=n) for a, n in zip(arrays, needs)]
        kw = dict(kwargs)
        if "attn_mask" in kw:
            mask = kw["attn_mask"]
            kw["attn_mask"] = lib.tensor(mask.astype(dtype) if mask.dtype != bool else mask, requires_grad=mask_needs)
        if lib is ta:
            kw["block_size"] = block_size
        out = sdpa(*ts, **kw)
        out.backward(lib.tensor(upstream.astype(dtype)))
        grads = [t.grad for t in ts] + ([kw["attn_mask"].grad] if mask_needs else [])
        got.append((out, grads))
    (ours, our_grads), (theirs, their_grads) = got
    tol = dict(rtol=1e-9, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-5)
    assert ours.dtype == dtype
    np.testing.assert_allclose(ours.array, theirs.detach().numpy(), **tol, err_msg=f"output, {kwargs}")
    for i, (g, t) in enumerate(zip(our_grads, their_grads)):
        assert (g is None) == (t is None), f"gradient {i}"
        if g is not None:
            assert g.dtype == dtype and g.shape == tuple(t.shape), f"gradient {i}: {g.dtype}, {g.shape}"
            np.testing.assert_allclose(g, t.numpy(), **tol, err_msg=f"gradient {i}, {kwargs}")


def test_layers_match_torch():
    rng = np.random.default_rng(4)
    x_np = rng.standard_normal((2, 3, 4))
    upstream = rng.standard_normal((2, 3, 4))
    cases = [
        (nn.Linear(4, 4, dtype=ta.float64), torch.nn.Linear(4, 4, dtype=torch.float64)),
        (nn.LayerNorm(4, dtype=ta.float64), torch.nn.LayerNorm(4, dtype=torch.float64)),
        (nn.GELU(), torch.nn.GELU()),
        (nn.GELU("tanh"), torch.nn.GELU("tanh")),
    ]
    for ours, theirs in cases:
        for p in ours.parameters():
            p.array[...] = rng.standard_normal(p.shape)
        theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
        xs = [ta.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)]
        outs = [ours(xs[0]), theirs(xs[1])]
        outs[0].backward(upstream)
        outs[1].backward(torch.tensor(upstream))
        np.testing.assert_allclose(outs[0].array, outs[1].detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(xs[0].grad, xs[1].grad.numpy(), rtol=1e-9, atol=1e-12)
        for (n, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            np.testing.assert_allclose(p.grad, q.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=n)


def test_embedding_and_cross_entropy_match_torch():
    ours = nn.Embedding(6, 4, dtype=ta.float64)
    theirs = torch.nn.Embedding(6, 4, dtype=torch.float64)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    ids = np.array([0, 5, 5, 2, 1])
    target = np.array([1, 3, -100, 0, 2])
    losses = []
    for module, lib, ce in ((ours, ta, F.cross_entropy), (theirs, torch, torch.nn.functional.cross_entropy)):
        logits = module(lib.tensor(ids)) * 2.0
        loss = ce(logits, lib.tensor(target))
        loss.backward()
        losses.append((loss.item(), np.asarray(module.weight.grad)))
    np.testing.assert_allclose(losses[0][0], losses[1][0], rtol=1e-12)
    np.testing.assert_allclose(losses[0][1], losses[1][1], rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("slip", [True, False])
def test_chapter_module_matches_torch_only_without_the_slip(slip):
    from tests.nn.chapter_module import ChapterMHA

    ta.manual_seed(0)
    model = ChapterMHA(16, 2, slip=slip, dtype=ta.float64)
    x = np.random.default_rng(0).standard_normal((3, 5, 16))
    out, weights = model(ta.tensor(x), ta.tensor(x), ta.tensor(x))
    theirs = torch.nn.MultiheadAttention(16, 2, batch_first=True, dtype=torch.float64)
    theirs.load_state_dict({k: torch.tensor(v) for k, v in model.packed_state_dict().items()})
    t_out, t_weights = theirs(*[torch.tensor(x)] * 3, average_attn_weights=False)
    assert np.allclose(out.array, t_out.detach().numpy(), atol=1e-10) != slip
    assert np.allclose(weights.array, t_weights.detach().numpy(), atol=1e-10) != slip
