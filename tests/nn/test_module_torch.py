"""Module trees against torch's: the same random tree (nested, shared modules, tied weights) built in both,
then every name listing, state_dict both ways, train/eval and casting compared."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def build(lib_nn, spec, dtype):
    """Build ``spec`` (made by ``random_spec``) with ``lib_nn`` (tinyattn.nn or torch.nn)."""
    made = []
    for kind, arg in spec:
        if kind == "linear":
            m = lib_nn.Linear(*arg, dtype=dtype)
        elif kind == "norm":
            m = lib_nn.LayerNorm(arg, dtype=dtype)
        elif kind == "seq":
            m = lib_nn.Sequential(*(made[i] for i in arg))  # arg: indices of earlier modules (shared if reused)
        elif kind == "list":
            m = lib_nn.ModuleList([made[i] for i in arg])
        else:  # "tie": the first Linear's weight shared by another Linear of the same shape
            a, b = arg
            made[b].weight = made[a].weight
            continue
        made.append(m)
    return made[-1]


def random_spec(rng):
    spec = [("linear", (3, 2)), ("linear", (3, 2)), ("norm", 2)]
    for _ in range(int(rng.integers(3, 7))):
        kind = rng.choice(["linear", "norm", "seq", "list"])
        n_made = sum(1 for k, _ in spec if k != "tie")
        if kind == "linear":
            spec.append(("linear", (int(rng.integers(1, 4)), int(rng.integers(1, 4)))))
        elif kind == "norm":
            spec.append(("norm", int(rng.integers(1, 4))))
        else:
            spec.append((kind, [int(i) for i in rng.integers(0, n_made, size=int(rng.integers(1, 4)))]))
    if rng.integers(2):
        spec.append(("tie", (0, 1)))
    n_made = sum(1 for k, _ in spec if k != "tie")
    spec.append(("seq", list(range(n_made))))  # the root holds everything (some modules twice)
    return spec


@pytest.mark.parametrize("seed", range(12))
def test_module_tree_matches_torch(seed):
    rng = np.random.default_rng(seed)
    spec = random_spec(rng)
    ours, theirs = build(nn, spec, ta.float64), build(torch.nn, spec, torch.float64)
    for prefix in ("", "model"):
        for dedup in (True, False):
            assert [n for n, _ in ours.named_modules(prefix, dedup)] == [
                n for n, _ in theirs.named_modules(prefix=prefix, remove_duplicate=dedup)]
            assert [n for n, _ in ours.named_parameters(prefix, remove_duplicate=dedup)] == [
                n for n, _ in theirs.named_parameters(prefix=prefix, remove_duplicate=dedup)]
    assert [tuple(p.shape) for p in ours.parameters()] == [tuple(t.shape) for t in theirs.parameters()]
    for (_, mine), (name, its) in zip(ours.named_modules(), theirs.named_modules(), strict=True):
        assert [n for n, _ in mine.named_parameters("p", recurse=False)] == [  # its own only (a Linear's, a norm's)
            n for n, _ in its.named_parameters("p", recurse=False)], name
        assert [tuple(p.shape) for p in mine.parameters(recurse=False)] == [
            tuple(t.shape) for t in its.parameters(recurse=False)], name
    assert [id(p) for p in ours.parameters()] == [id(p) for _, p in ours.named_parameters()]  # the same, in order
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in theirs.modules()]
    assert [id(m) for m in ours.modules()] == [id(m) for _, m in ours.named_modules()]
    assert len(list(ours.children())) == len(list(theirs.children()))
    assert list(ours.state_dict()) == list(theirs.state_dict())

    ours.load_state_dict(theirs.state_dict())  # torch's values into ours, and ours back into torch
    for (name, p), (_, t) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_array_equal(p.array, t.detach().numpy(), err_msg=name)
    ours.load_state_dict(dict(theirs.named_parameters(remove_duplicate=False)))  # live tensors requiring grad
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})

    for m in (ours, theirs):
        m.eval()
    assert [m.training for m in ours.modules()] == [m.training for m in theirs.modules()] == [False] * len(
        list(ours.modules()))
    ours.train()
    assert all(m.training is True for m in ours.modules())


def test_load_state_dict_takes_tensors_that_require_grad_and_copies():
    src, dst = nn.Linear(3, 2, dtype=ta.float64), nn.Linear(3, 2, dtype=ta.float32)
    dst.load_state_dict(dict(src.named_parameters()))  # Parameters require grad: read through detach()
    np.testing.assert_allclose(dst.weight.array, src.weight.array.astype(np.float32))
    assert dst.weight.dtype == np.float32 and not np.shares_memory(dst.weight.array, src.weight.array)


@pytest.mark.parametrize("cast, dtype", [("double", np.float64), ("float", np.float32)])
def test_module_casts_parameters_and_their_gradients_like_torch(cast, dtype):
    ours = nn.Linear(3, 2, dtype=np.float32 if dtype == np.float64 else np.float64)
    theirs = torch.nn.Linear(3, 2, dtype=torch.float32 if dtype == np.float64 else torch.float64)
    for m, lib in ((ours, ta), (theirs, torch)):
        m(lib.ones(4, 3, dtype=m.weight.dtype)).sum().backward()
        assert getattr(m, cast)() is m
    assert str(theirs.weight.grad.dtype) == f"torch.{np.dtype(dtype).name}"  # torch casts the grad too
    assert ours.weight.dtype == ours.weight.grad.dtype == ours.bias.grad.dtype == dtype
