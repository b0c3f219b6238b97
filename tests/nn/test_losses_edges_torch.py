"""Losses given plain arrays and lists (not tensors), the deprecated arguments refused by name,
and the shapes of ``reduction="none"`` at size-1 dims, against torch."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.nn import functional as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch
TF = torch.nn.functional


def test_weights_targets_and_pos_weights_as_arrays_or_lists_act_as_tensors(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    y = [0, 2, 1, 2]
    w = [0.5, 2.0, 1.5]
    probs = rng.uniform(0, 1, (4, 3)).astype(np.float32)
    pairs = [
        (F.cross_entropy(ta.tensor(x), y, weight=w, label_smoothing=0.1),
         TF.cross_entropy(torch.tensor(x), torch.tensor(y), weight=torch.tensor(w), label_smoothing=0.1)),
        (F.nll_loss(ta.tensor(x), np.array(y), weight=np.array(w)),
         TF.nll_loss(torch.tensor(x), torch.tensor(y), weight=torch.tensor(w))),
        (F.binary_cross_entropy_with_logits(ta.tensor(x), probs, pos_weight=w, weight=np.ones(3)),
         TF.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(probs), pos_weight=torch.tensor(w),
                                             weight=torch.ones(3))),
        (F.binary_cross_entropy(ta.tensor(probs), probs[::-1].copy()),
         TF.binary_cross_entropy(torch.tensor(probs), torch.tensor(probs[::-1].copy()))),
        (F.kl_div(ta.tensor(np.log(probs)), probs[::-1].copy()),
         TF.kl_div(torch.tensor(np.log(probs)), torch.tensor(probs[::-1].copy()))),
        (F.l1_loss(ta.tensor(x), x[::-1].copy()), TF.l1_loss(torch.tensor(x), torch.tensor(x[::-1].copy()))),
        (F.mse_loss(ta.tensor(x), x * 2), TF.mse_loss(torch.tensor(x), torch.tensor(x * 2))),
    ]
    for ours, theirs in pairs:
        assert ours.dtype == np.float32  # a float64 array or a list never widens the loss
        np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-5)


FUNCTIONS = {
    "cross_entropy": (lambda **k: F.cross_entropy(ta.zeros(2, 3), [0, 1], **k)),
    "nll_loss": (lambda **k: F.nll_loss(ta.zeros(2, 3), [0, 1], **k)),
    "binary_cross_entropy_with_logits": (lambda **k: F.binary_cross_entropy_with_logits(ta.zeros(2), [0.0, 1.0],
                                                                                        **k)),
    "binary_cross_entropy": (lambda **k: F.binary_cross_entropy(ta.full((2,), 0.5), [0.0, 1.0], **k)),
    "l1_loss": (lambda **k: F.l1_loss(ta.zeros(2), ta.ones(2), **k)),
    "mse_loss": (lambda **k: F.mse_loss(ta.zeros(2), ta.ones(2), **k)),
    "kl_div": (lambda **k: F.kl_div(ta.zeros(2), ta.ones(2), **k)),
}
MODULES = [nn.CrossEntropyLoss, nn.NLLLoss, nn.BCEWithLogitsLoss, nn.BCELoss, nn.L1Loss, nn.MSELoss, nn.KLDivLoss]


LEGACY = [{"size_average": False}, {"size_average": True}, {"reduce": False}, {"reduce": True},
          {"size_average": False, "reduce": True}, {"size_average": True, "reduce": False}]


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("legacy", LEGACY, ids=str)
def test_the_deprecated_arguments_mean_what_torch_reads_them_as(name, legacy):
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, please use "
                                         "reduction='(none|sum|mean)' instead"):
        old_style = FUNCTIONS[name](**legacy)
    reduce, size_average = legacy.get("reduce", True), legacy.get("size_average", True)
    expected = FUNCTIONS[name](reduction="none" if not reduce else "mean" if size_average else "sum")
    np.testing.assert_array_equal(old_style.detach().numpy(), expected.detach().numpy())


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_the_modules_read_them_as_torch(module):
    for legacy in LEGACY:
        with pytest.warns(UserWarning):
            ours = module(**legacy).reduction
        with pytest.warns(UserWarning):
            theirs = getattr(torch.nn, module.__name__)(**legacy).reduction
        assert ours == theirs, legacy
    assert module(reduction="sum").reduction == "sum" and module().extra_repr() == ""
    assert module(reduction="none").extra_repr() == "reduction='none'"


@pytest.mark.parametrize("shape", [(1, 3), (1, 3, 1), (2, 3, 1, 2), (3,)])
def test_per_target_losses_keep_size_1_dims_as_torch(shape, rng):
    x = rng.standard_normal(shape)
    batch = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    y = rng.integers(0, 3, batch)
    for ours_fn, theirs_fn in ((F.cross_entropy, TF.cross_entropy), (F.nll_loss, TF.nll_loss)):
        ours = ours_fn(ta.tensor(x), y, reduction="none")
        theirs = theirs_fn(torch.tensor(x), torch.tensor(y), reduction="none")
        assert ours.shape == tuple(theirs.shape), (ours_fn.__name__, shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)


@pytest.mark.parametrize(("name", "call", "message"), [
    ("nll_loss", lambda: F.nll_loss(ta.zeros(2, 3), [0.5, 1.0]), r"^nll_loss: targets must be integer class indices, "
                                                                  r"got dtype float64$"),
    ("cross_entropy", lambda: F.cross_entropy(ta.zeros(2, 3), [0.5, 1.0]),
     r"^cross_entropy: targets must be integer class indices, got dtype float64 \(or class probabilities of shape "
     r"\(2, 3\)\)$"),
    ("nll_loss", lambda: F.nll_loss(ta.zeros(()), 0), r"^nll_loss: expected input of shape"),
    ("nll_loss", lambda: F.nll_loss(ta.zeros(2, 3), [0, 1], weight=[1.0]), r"^nll_loss: weight must have shape"),
    ("nll_loss", lambda: F.nll_loss(ta.zeros(2, 3), [0, 3]), r"^nll_loss: target 3 is out of range for 3 classes"),
])
def test_refusals_name_their_function(name, call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()
