"""The version checks behind in-place changes and views, and the dims of 0-d tensors: each as torch behaves
(torch is the oracle where it runs). The guard on what a backward returns is in ``test_engine.py``."""

import pytest

import tinyattn as ta


def test_an_overwritten_output_a_backward_needs_is_named_in_the_refusal():
    x = ta.ones(3, requires_grad=True)
    y = x.exp()  # exp's backward reads its output
    y.add_(1.0)
    with pytest.raises(RuntimeError, match=r"\[the output of Exp of shape \(3,\)\] is at version"):
        y.backward(ta.ones(3))


def test_an_overwritten_output_keeps_the_check_on_the_saved_input():
    # a ** e (e a tensor) saves its input and its output, in torch too: changing both in place, the refusal
    # names the input (as torch's does), so the output's check was added beside the input's, not instead of it
    x = ta.ones(3, requires_grad=True)
    e = ta.full((3,), 3.0, requires_grad=True)
    a = x * 2.0
    y = a ** e
    a.mul_(2.0)
    y.add_(1.0)
    with pytest.raises(RuntimeError, match=r"\[Tensor of shape \(3,\)\] is at version 1; expected version 0"):
        y.backward(ta.ones(3))
    b = x * 2.0
    z = b ** e
    z.add_(1.0)  # the output alone
    with pytest.raises(RuntimeError, match=r"\[the output of Pow of shape \(3,\)\] is at version"):
        z.backward(ta.ones(3))


def test_a_view_of_a_view_shares_its_root_s_version_counter():
    torch = pytest.importorskip("torch")
    for lib in (ta, torch):
        x = lib.ones(2, 3, requires_grad=True)
        a = x * 1
        v = a[0][1:]  # a view of a view: its version is a's
        w = v * v  # saves v
        with lib.no_grad():
            a.mul_(3.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            w.backward(lib.ones(2))


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "sum", "mean", "amax", "unsqueeze_back"])
def test_dim_minus_one_of_a_zero_d_tensor_is_its_only_dim_as_in_torch(op):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (ta, torch):
        x = lib.tensor(2.5, requires_grad=True)
        out = {"softmax": x.softmax, "log_softmax": x.log_softmax, "sum": x.sum, "mean": x.mean, "amax": x.amax,
               "unsqueeze_back": x.unsqueeze}[op](-1)
        out.backward(lib.ones_like(out))
        results.append((tuple(out.shape), float(out.detach().reshape(-1)[0]), float(x.grad)))
    assert results[0] == results[1]


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_extremes_of_a_zero_d_tensor_along_dim_minus_one_are_index_zero_as_in_torch(op):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(ta.tensor(2.5), op)(-1), getattr(torch.tensor(2.5), op)(-1)
    assert ours.item() == theirs.item() == 0 and ours.shape == tuple(theirs.shape) == ()


def test_a_result_that_is_no_view_keeps_its_own_version_counter():
    torch = pytest.importorskip("torch")
    for lib in (ta, torch):
        q = lib.ones(1, 2, 4, requires_grad=True) * 1
        w = q * q  # saves q
        o = lib.nn.functional.scaled_dot_product_attention(q, q, q)  # (its array views a temporary, not q)
        with lib.no_grad():
            o.mul_(2.0)  # changes o, not q
        w.backward(lib.ones(1, 2, 4))  # so nothing w saved was modified
        assert float(o.sum()) == 16.0
