"""The core runs alone, whatever else is imported: the chapter's multi-head attention on core tensors.

The whole package is imported first (tinyattn's torch-like classes are built on the core's). The core's own
``multi_head_attention`` then runs forward and backward on core tensors: every tensor and node on its graph
is the core's own class, its gradients are tinyattn's torch-like layer's and torch's, and a debugger stepping
from ``loss.backward()`` reaches ``Softmax.backward`` through core files only, in a few frames.
"""

import pathlib
import sys

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.autograd import core
from tinyattn.autograd.core import attention, grad_mode
from tinyattn.autograd.core.function import LeafNode, Node, TensorBase
from tinyattn.autograd.core.ops.softmax import Softmax
from tinyattn.nn import functional as F

CORE = pathlib.Path(core.__file__).parent
B, L, S, E, H = 3, 5, 4, 16, 2  # the chapter's sizes (two heads), keys and values of another length


def chapter_arrays(seed):
    rng = np.random.default_rng(seed)
    return {
        "query": rng.standard_normal((B, L, E)), "key": rng.standard_normal((B, S, E)),
        "value": rng.standard_normal((B, S, E)),
        "weights": [rng.standard_normal((E, E)) / 4 for _ in range(4)],
        "biases": [rng.standard_normal(E) / 4 for _ in range(4)],
        "grad": rng.standard_normal((B, L, E)),
    }


class Seen:
    """A recorder (grad_mode.py) that keeps every tensor an op took or made, and every node it recorded."""

    def __init__(self):
        self.tensors, self.nodes = [], []

    def forward(self, node, args, output):
        self.nodes.append(node)
        self.tensors.extend([a for a in args if isinstance(a, TensorBase)] + [output])

    def backward(self, node, grad_output, grad_inputs):
        pass


def core_run(arrays):
    leaves = {name: core.Tensor(arrays[name], requires_grad=True) for name in ("query", "key", "value")}
    weights = [core.Tensor(w, requires_grad=True) for w in arrays["weights"]]
    biases = [core.Tensor(b, requires_grad=True) for b in arrays["biases"]]
    seen = Seen()
    previous = grad_mode.set_recorder(seen)
    try:
        out, p = attention.multi_head_attention(leaves["query"], leaves["key"], leaves["value"], H, weights, biases)
    finally:
        grad_mode.set_recorder(previous)
    out.backward(arrays["grad"])
    return out, p, [*leaves.values(), *weights, *biases], seen


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_chapters_mha_on_core_tensors_keeps_every_tensor_and_node_the_cores_and_matches_tinyattn_and_torch(seed):
    torch = pytest.importorskip("torch")
    arrays = chapter_arrays(seed)
    out, p, leaves, seen = core_run(arrays)
    assert len(seen.nodes) >= 15
    assert {type(t) for t in seen.tensors} == {core.Tensor}
    assert {type(n) for n in seen.nodes} == {Node}
    assert {type(n) for n in core.topological_order([out.grad_fn]) if not n.edges} == {LeafNode}
    assert {type(t.grad) for t in leaves} == {core.Tensor}

    # tinyattn's torch-like layer, the same arrays
    surface = [ta.tensor(arrays[n], requires_grad=True) for n in ("query", "key", "value")]
    weights = [ta.tensor(w, requires_grad=True) for w in arrays["weights"]]
    biases = [ta.tensor(b, requires_grad=True) for b in arrays["biases"]]
    s_out, s_p = F.multi_head_attention(*surface, H, tuple(weights), tuple(biases))
    s_out.backward(ta.tensor(arrays["grad"]))
    np.testing.assert_allclose(out.array, s_out.numpy() if not s_out.requires_grad else s_out.detach().numpy())
    np.testing.assert_allclose(p.array, s_p.detach().numpy())
    for mine, theirs in zip(leaves, [*surface, *weights, *biases]):
        np.testing.assert_allclose(mine.grad.array, theirs.grad.numpy(), rtol=1e-10, atol=1e-12)

    # torch's MultiheadAttention, its projections set to the same weights
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.tensor(np.concatenate(arrays["weights"][:3])))
        mha.in_proj_bias.copy_(torch.tensor(np.concatenate(arrays["biases"][:3])))
        mha.out_proj.weight.copy_(torch.tensor(arrays["weights"][3]))
        mha.out_proj.bias.copy_(torch.tensor(arrays["biases"][3]))
    t_in = [torch.tensor(arrays[n], requires_grad=True) for n in ("query", "key", "value")]
    t_out, _ = mha(*t_in, need_weights=False)
    t_out.backward(torch.tensor(arrays["grad"]))
    np.testing.assert_allclose(out.array, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    in_w, in_b = mha.in_proj_weight.grad.numpy(), mha.in_proj_bias.grad.numpy()
    expected = [t.grad.numpy() for t in t_in]
    expected += [in_w[:E], in_w[E:2 * E], in_w[2 * E:], mha.out_proj.weight.grad.numpy()]
    expected += [in_b[:E], in_b[E:2 * E], in_b[2 * E:], mha.out_proj.bias.grad.numpy()]
    for mine, theirs in zip(leaves, expected):
        np.testing.assert_allclose(mine.grad.array, theirs, rtol=1e-10, atol=1e-12)


def frames_to(target, run):
    """The frames between the caller of ``run`` and the first call of ``target``'s code, outermost first:
    (file, function) each, as a debugger's stack shows them."""
    stack = []

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code is target.__code__ and not stack:
            here = frame
            while here is not None and here.f_code is not run.__code__:
                stack.append((pathlib.Path(here.f_code.co_filename), here.f_code.co_name))
                here = here.f_back
        return None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(previous)
    return stack[::-1]


def test_a_debugger_from_loss_backward_reaches_softmax_backward_in_four_frames_all_in_the_core():
    arrays = chapter_arrays(3)
    leaves = [core.Tensor(arrays[n], requires_grad=True) for n in ("query", "key", "value")]
    weights = [core.Tensor(w, requires_grad=True) for w in arrays["weights"]]
    out, _ = attention.multi_head_attention(*leaves, H, weights)
    loss = (out * arrays["grad"]).sum()

    def run():
        loss.backward()

    frames = frames_to(Softmax.backward, run)
    names = [name for _, name in frames]
    assert names == ["backward", "backward", "backward", "backward"], frames
    assert [path.relative_to(CORE).as_posix() for path, _ in frames] == [
        "tensor.py", "engine.py", "function.py", "ops/softmax.py"]


def test_the_same_walk_on_tinyattns_tensors_passes_torchs_loop_and_its_node():
    """(The torch-like layer adds its loop and its node's checks: more frames, outside the core.)"""
    arrays = chapter_arrays(4)
    leaves = [ta.tensor(arrays[n], requires_grad=True) for n in ("query", "key", "value")]
    weights = [ta.tensor(w, requires_grad=True) for w in arrays["weights"]]
    out, _ = attention.multi_head_attention(*leaves, H, weights)
    loss = (out * ta.tensor(arrays["grad"])).sum()

    def run():
        loss.backward()

    frames = frames_to(Softmax.backward, run)
    assert frames[-1] == (CORE / "ops" / "softmax.py", "backward")
    assert any(path.name == "backprop.py" for path, _ in frames)
    assert not all(CORE in path.parents for path, _ in frames)


def test_the_cores_attention_on_three_dim_inputs_with_a_mask_is_the_formula_and_tinyattns():
    rng = np.random.default_rng(5)
    q, k, v = rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 3, 5))
    mask = np.where(rng.random((4, 3)) < 0.3, -np.inf, 0.0)
    mask[:, 0] = 0.0  # (every query keeps a key)
    g = rng.standard_normal((2, 4, 5))
    leaves = [core.Tensor(a, requires_grad=True) for a in (q, k, v)]
    out, p = attention.attention(*leaves, mask)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(6) + mask
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    np.testing.assert_allclose(p.array, weights)
    np.testing.assert_allclose(out.array, weights @ v)
    out.backward(g)
    theirs = [ta.tensor(a, requires_grad=True) for a in (q, k, v)]
    t_out, _ = F.attention(*theirs, ta.tensor(mask))
    t_out.backward(ta.tensor(g))
    for mine, other in zip(leaves, theirs):
        np.testing.assert_allclose(mine.grad.array, other.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_the_cores_mha_without_biases_and_with_a_mask_is_tinyattns():
    arrays = chapter_arrays(6)
    mask = np.triu(np.full((L, S), -np.inf), k=1)  # (query i sees keys 0..i)
    leaves = [core.Tensor(arrays[n], requires_grad=True) for n in ("query", "key", "value")]
    weights = [core.Tensor(w, requires_grad=True) for w in arrays["weights"]]
    out, p = attention.multi_head_attention(*leaves, H, weights, mask=mask)
    out.backward(arrays["grad"])
    assert np.all(p.array[..., np.triu_indices(L, 1, S)[0], np.triu_indices(L, 1, S)[1]] == 0)
    theirs = [ta.tensor(arrays[n], requires_grad=True) for n in ("query", "key", "value")]
    t_weights = [ta.tensor(w, requires_grad=True) for w in arrays["weights"]]
    t_out, t_p = F.multi_head_attention(*theirs, H, tuple(t_weights), mask=ta.tensor(mask))
    t_out.backward(ta.tensor(arrays["grad"]))
    np.testing.assert_allclose(p.array, t_p.detach().numpy(), rtol=1e-12, atol=1e-14)
    for mine, other in zip([*leaves, *weights], [*theirs, *t_weights]):
        np.testing.assert_allclose(mine.grad.array, other.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_heads_that_do_not_divide_the_width_are_refused_naming_both():
    x = core.Tensor(np.ones((1, 2, 6)))
    with pytest.raises(ValueError, match="the embedding size 6 is not divisible by num_heads 4"):
        attention.multi_head_attention(x, x, x, 4, [core.Tensor(np.eye(6))] * 4)
