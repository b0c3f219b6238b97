"""Losses against torch over randomized option grids: values and gradients (random upstream gradients),
functional and module forms, float32 and float64."""

import itertools

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.autograd import gradcheck
from tinyattn.nn import functional as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch
TF = torch.nn.functional
REDUCTIONS = ["mean", "sum", "none"]


def compare(ours_fn, theirs_fn, inputs, rng, rtol, grads_for=None):
    """Same value, and the same gradients for every float input (targets too, as torch gives them)
    under one random upstream gradient."""
    wants = [a.dtype.kind == "f" and (grads_for is None or i in grads_for) for i, a in enumerate(inputs)]
    ours_in = [ta.tensor(a.copy(), requires_grad=w) for a, w in zip(inputs, wants)]
    theirs_in = [torch.tensor(a.copy(), requires_grad=w) for a, w in zip(inputs, wants)]
    a, b = ours_fn(*ours_in), theirs_fn(*theirs_in)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=rtol)
    upstream = rng.standard_normal(tuple(b.shape)).astype(inputs[0].dtype)
    a.backward(ta.tensor(upstream))
    b.backward(torch.tensor(upstream))
    for x, y in zip(ours_in, theirs_in):
        if y.requires_grad:
            np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=rtol, atol=rtol)


def batch_shape(rng):
    return [(6,), (), (3, 4)][int(rng.integers(3))]  # (N,), a single sample, (N, d1)


@pytest.mark.parametrize("seed", range(24))
def test_cross_entropy_with_class_indices_matches_torch(seed):
    rng = np.random.default_rng(seed)
    dtype = [np.float32, np.float64][seed % 2]
    C = int(rng.integers(2, 6))
    batch = batch_shape(rng)
    logits = (rng.standard_normal((batch[0], C, *batch[1:]) if batch else (C,)) * 3).astype(dtype)
    target = rng.integers(0, C, batch)
    ignore = int(rng.choice([-100, 1]))
    if batch and seed % 3 == 0:
        target.flat[0] = ignore
    weight = rng.uniform(0.2, 2.0, C).astype(dtype) if seed % 4 < 2 else None
    options = dict(reduction=REDUCTIONS[seed % 3], label_smoothing=float(rng.choice([0.0, 0.1, 0.35])),
                   ignore_index=ignore)
    rtol = 1e-5 if dtype == np.float32 else 1e-10
    compare(lambda x: F.cross_entropy(x, target, weight=None if weight is None else ta.tensor(weight), **options),
            lambda x: TF.cross_entropy(x, torch.tensor(target),
                                       weight=None if weight is None else torch.tensor(weight), **options),
            [logits], rng, rtol)
    module = nn.CrossEntropyLoss(weight=None if weight is None else ta.tensor(weight), **options)
    theirs = torch.nn.CrossEntropyLoss(weight=None if weight is None else torch.tensor(weight), **options)
    compare(lambda x: module(x, target), lambda x: theirs(x, torch.tensor(target)), [logits], rng, rtol)


@pytest.mark.parametrize("seed", range(12))
def test_cross_entropy_with_class_probabilities_matches_torch(seed):
    rng = np.random.default_rng(100 + seed)
    shape = [(5, 3), (4,), (2, 3, 4)][seed % 3]
    logits = rng.standard_normal(shape)
    probs = rng.dirichlet(np.ones(shape[1] if len(shape) > 1 else shape[0]), size=int(np.prod(shape)) //
                          (shape[1] if len(shape) > 1 else shape[0]))
    probs = np.moveaxis(probs.reshape((shape[0],) + shape[2:] + shape[1:2]), -1, 1) if len(shape) > 1 else probs[0]
    weight = rng.uniform(0.5, 2, shape[1] if len(shape) > 1 else shape[0]) if seed % 2 else None
    options = dict(reduction=REDUCTIONS[seed % 3], label_smoothing=[0.0, 0.2][seed // 6])
    compare(lambda x, p: F.cross_entropy(x, p, weight=None if weight is None else ta.tensor(weight), **options),
            lambda x, p: TF.cross_entropy(x, p, weight=None if weight is None else torch.tensor(weight), **options),
            [logits, probs], rng, 1e-10)


@pytest.mark.parametrize("seed", range(12))
def test_nll_loss_matches_torch(seed):
    rng = np.random.default_rng(200 + seed)
    C, batch = 4, batch_shape(rng)
    logp = np.log(rng.dirichlet(np.ones(C), size=int(np.prod(batch)) if batch else 1))
    logp = np.moveaxis(logp.reshape(batch + (C,)), -1, 1) if len(batch) > 1 else logp.reshape(batch + (C,))
    target = rng.integers(0, C, batch)
    weight = rng.uniform(0.5, 2, C) if seed % 2 else None
    options = dict(reduction=REDUCTIONS[seed % 3], ignore_index=int(target.flat[0]) if seed % 4 == 3 else -100)
    compare(lambda x: nn.NLLLoss(weight=None if weight is None else ta.tensor(weight), **options)(x, target),
            lambda x: TF.nll_loss(x, torch.tensor(target), weight=None if weight is None else torch.tensor(weight),
                                  **options),
            [logp], rng, 1e-10)


@pytest.mark.parametrize(("seed", "reduction"), list(itertools.product(range(6), REDUCTIONS)))
def test_binary_cross_entropy_with_logits_matches_torch(seed, reduction):
    rng = np.random.default_rng(300 + seed)
    shape = (5, 3)
    logits = rng.standard_normal(shape) * [1, 10, 60][seed % 3]  # large logits: no overflow either way
    target = rng.uniform(0, 1, shape) if seed % 2 else rng.integers(0, 2, shape).astype(float)
    weight = rng.uniform(0.5, 2, (3,)) if seed >= 3 else None
    pos_weight = rng.uniform(0.5, 3, (3,)) if seed % 3 != 1 else None
    as_ta = lambda a: None if a is None else ta.tensor(a)  # noqa: E731
    as_torch = lambda a: None if a is None else torch.tensor(a)  # noqa: E731
    compare(lambda x, y: F.binary_cross_entropy_with_logits(x, y, weight=as_ta(weight), reduction=reduction,
                                                            pos_weight=as_ta(pos_weight)),
            lambda x, y: TF.binary_cross_entropy_with_logits(x, y, weight=as_torch(weight), reduction=reduction,
                                                             pos_weight=as_torch(pos_weight)),
            [logits, target], rng, 1e-10)
    compare(lambda x, y: nn.BCEWithLogitsLoss(pos_weight=as_ta(pos_weight), reduction=reduction)(x, y),
            lambda x, y: torch.nn.BCEWithLogitsLoss(pos_weight=as_torch(pos_weight), reduction=reduction)(x, y),
            [logits.astype(np.float32), target.astype(np.float32)], rng, 1e-5)


@pytest.mark.parametrize(("seed", "reduction"), list(itertools.product(range(4), REDUCTIONS)))
def test_bce_l1_mse_and_kl_div_match_torch(seed, reduction):
    rng = np.random.default_rng(400 + seed)
    shape = [(4, 3), (7,), (2, 2, 3), ()][seed]
    p = rng.uniform(0.01, 0.99, shape)
    y = rng.uniform(0, 1, shape)
    weight = rng.uniform(0.5, 2, shape) if seed % 2 else None
    compare(lambda a, b: nn.BCELoss(weight=None if weight is None else ta.tensor(weight), reduction=reduction)(a, b),
            lambda a, b: TF.binary_cross_entropy(a, b, weight=None if weight is None else torch.tensor(weight),
                                                 reduction=reduction), [p, y], rng, 1e-10)
    x, t = rng.standard_normal(shape), rng.standard_normal(shape)
    compare(lambda a, b: nn.L1Loss(reduction=reduction)(a, b), lambda a, b: TF.l1_loss(a, b, reduction=reduction),
            [x, t], rng, 1e-10)
    compare(lambda a, b: nn.MSELoss(reduction=reduction)(a, b), lambda a, b: TF.mse_loss(a, b, reduction=reduction),
            [x, t], rng, 1e-10)
    logq = np.log(rng.dirichlet(np.ones(3), size=4))
    target = rng.dirichlet(np.ones(3), size=4)
    for log_target in (False, True):
        tgt = np.log(target) if log_target else target
        for red in (reduction, "batchmean"):
            options = dict(reduction=red, log_target=log_target)
            compare(lambda a, b, o=options: nn.KLDivLoss(**o)(a, b),
                    lambda a, b, o=options: TF.kl_div(a, b, **o), [logq, tgt], rng, 1e-10)
    target[0, 1] = 0.0  # 0 log 0 = 0 (torch's gradient in the target is nan there: the input's only)
    compare(lambda a, b: F.kl_div(a, b, reduction=reduction), lambda a, b: TF.kl_div(a, b, reduction=reduction),
            [logq, target], rng, 1e-10, grads_for=(0,))


def test_gradcheck_of_the_losses_through_their_ops(rng):
    x = ta.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    y = rng.integers(0, 3, 4)
    w = ta.tensor(rng.uniform(0.5, 2, 3))
    probs = ta.tensor(rng.uniform(0.1, 0.9, (4, 3)))
    assert gradcheck(lambda x: F.cross_entropy(x, y, weight=w, label_smoothing=0.2), (x,))
    assert gradcheck(lambda x: F.binary_cross_entropy_with_logits(x, probs, pos_weight=w), (x,))
    assert gradcheck(lambda x: F.kl_div(x.log_softmax(dim=1), probs, reduction="batchmean"), (x,))


def test_refusals_name_the_argument_and_shapes():
    x = ta.zeros(3, 4)
    with pytest.raises(ValueError, match=r"weight must have shape \(4,\), one per class, got \(3,\)"):
        F.cross_entropy(x, np.zeros(3, dtype=int), weight=ta.ones(3))
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0, got 1.5"):
        F.cross_entropy(x, np.zeros(3, dtype=int), label_smoothing=1.5)
    with pytest.raises(ValueError, match=r"input shape \(3, 4\) and target shape \(4,\) differ"):
        F.binary_cross_entropy_with_logits(x, np.zeros(4))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ta.full((2,), 1.5), np.zeros(2))
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none', got 'avg'"):
        F.l1_loss(x, x, reduction="avg")
