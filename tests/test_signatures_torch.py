"""Every public callable that torch also has takes torch's arguments, in torch's order, with torch's defaults.

A positional call that torch reads differently (``F.cross_entropy(x, t, 5)``: ``weight`` in torch) would
silently differ, so beyond the shared leading arguments ours are keyword-only, and torch's names are
kept (a keyword torch lacks, or one of torch's that is missing here, is a clear ``TypeError``).
"""

import inspect

import pytest

import tinyattn as ta
from tinyattn import nn, optim
from tinyattn.autograd import grad
from tinyattn.nn import functional as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

PAIRS = {
    "optim.SGD": (optim.SGD, torch.optim.SGD),
    "optim.Adam": (optim.Adam, torch.optim.Adam),
    "optim.AdamW": (optim.AdamW, torch.optim.AdamW),
    "optim.Optimizer.add_param_group": (optim.Optimizer.add_param_group, torch.optim.Optimizer.add_param_group),
    "optim.SGD.step": (optim.SGD.step, torch.optim.SGD.step),
    "optim.Adam.step": (optim.Adam.step, torch.optim.Adam.step),
    "save": (ta.save, torch.save),
    "load": (ta.load, torch.load),
    "lr_scheduler.StepLR": (optim.lr_scheduler.StepLR, torch.optim.lr_scheduler.StepLR),
    "lr_scheduler.MultiStepLR": (optim.lr_scheduler.MultiStepLR, torch.optim.lr_scheduler.MultiStepLR),
    "lr_scheduler.ExponentialLR": (optim.lr_scheduler.ExponentialLR, torch.optim.lr_scheduler.ExponentialLR),
    "lr_scheduler.LambdaLR": (optim.lr_scheduler.LambdaLR, torch.optim.lr_scheduler.LambdaLR),
    "lr_scheduler.LinearLR": (optim.lr_scheduler.LinearLR, torch.optim.lr_scheduler.LinearLR),
    "lr_scheduler.CosineAnnealingLR": (optim.lr_scheduler.CosineAnnealingLR,
                                       torch.optim.lr_scheduler.CosineAnnealingLR),
    "lr_scheduler.OneCycleLR": (optim.lr_scheduler.OneCycleLR, torch.optim.lr_scheduler.OneCycleLR),
    "lr_scheduler.SequentialLR": (optim.lr_scheduler.SequentialLR, torch.optim.lr_scheduler.SequentialLR),
    "lr_scheduler.ReduceLROnPlateau": (optim.lr_scheduler.ReduceLROnPlateau,
                                       torch.optim.lr_scheduler.ReduceLROnPlateau),
    "nn.Linear": (nn.Linear, torch.nn.Linear),
    "nn.TransformerEncoder": (nn.TransformerEncoder, torch.nn.TransformerEncoder),
    "nn.TransformerEncoder.forward": (nn.TransformerEncoder.forward, torch.nn.TransformerEncoder.forward),
    "nn.TransformerDecoderLayer": (nn.TransformerDecoderLayer, torch.nn.TransformerDecoderLayer),
    "nn.TransformerDecoderLayer.forward": (nn.TransformerDecoderLayer.forward,
                                            torch.nn.TransformerDecoderLayer.forward),
    "nn.TransformerDecoder": (nn.TransformerDecoder, torch.nn.TransformerDecoder),
    "nn.TransformerDecoder.forward": (nn.TransformerDecoder.forward, torch.nn.TransformerDecoder.forward),
    "nn.Transformer": (nn.Transformer, torch.nn.Transformer),
    "nn.Transformer.forward": (nn.Transformer.forward, torch.nn.Transformer.forward),
    "nn.TransformerEncoderLayer.forward": (nn.TransformerEncoderLayer.forward,
                                            torch.nn.TransformerEncoderLayer.forward),
    "nn.Flatten": (nn.Flatten, torch.nn.Flatten),
    "nn.Unflatten": (nn.Unflatten, torch.nn.Unflatten),
    "nn.Softmax": (nn.Softmax, torch.nn.Softmax),
    "nn.SiLU": (nn.SiLU, torch.nn.SiLU),
    "nn.LazyLinear": (nn.LazyLinear, torch.nn.LazyLinear),
    "nn.ParameterList": (nn.ParameterList, torch.nn.ParameterList),
    "nn.ParameterDict": (nn.ParameterDict, torch.nn.ParameterDict),
    "F.silu": (F.silu, torch.nn.functional.silu),
    "Module.requires_grad_": (nn.Module.requires_grad_, torch.nn.Module.requires_grad_),
    "nn.Embedding": (nn.Embedding, torch.nn.Embedding),
    "nn.LayerNorm": (nn.LayerNorm, torch.nn.LayerNorm),
    "nn.Dropout": (nn.Dropout, torch.nn.Dropout),
    "nn.GELU": (nn.GELU, torch.nn.GELU),
    "nn.CrossEntropyLoss": (nn.CrossEntropyLoss, torch.nn.CrossEntropyLoss),
    "nn.MSELoss": (nn.MSELoss, torch.nn.MSELoss),
    "nn.MultiheadAttention": (nn.MultiheadAttention, torch.nn.MultiheadAttention),
    "nn.TransformerEncoderLayer": (nn.TransformerEncoderLayer, torch.nn.TransformerEncoderLayer),
    "nn.utils.clip_grad_norm_": (nn.utils.clip_grad_norm_, torch.nn.utils.clip_grad_norm_),
    "F.dropout": (F.dropout, torch.nn.functional.dropout),
    "F.layer_norm": (F.layer_norm, torch.nn.functional.layer_norm),
    "F.cross_entropy": (F.cross_entropy, torch.nn.functional.cross_entropy),
    "F.mse_loss": (F.mse_loss, torch.nn.functional.mse_loss),
    "nn.NLLLoss": (nn.NLLLoss, torch.nn.NLLLoss),
    "nn.BCEWithLogitsLoss": (nn.BCEWithLogitsLoss, torch.nn.BCEWithLogitsLoss),
    "nn.BCELoss": (nn.BCELoss, torch.nn.BCELoss),
    "nn.L1Loss": (nn.L1Loss, torch.nn.L1Loss),
    "nn.KLDivLoss": (nn.KLDivLoss, torch.nn.KLDivLoss),
    "F.nll_loss": (F.nll_loss, torch.nn.functional.nll_loss),
    "F.binary_cross_entropy_with_logits": (F.binary_cross_entropy_with_logits,
                                           torch.nn.functional.binary_cross_entropy_with_logits),
    "F.binary_cross_entropy": (F.binary_cross_entropy, torch.nn.functional.binary_cross_entropy),
    "F.l1_loss": (F.l1_loss, torch.nn.functional.l1_loss),
    "F.kl_div": (F.kl_div, torch.nn.functional.kl_div),
    "F.log_softmax": (F.log_softmax, torch.nn.functional.log_softmax),
    "Tensor.backward": (ta.Tensor.backward, torch.Tensor.backward),
    "autograd.grad": (grad, torch.autograd.grad),
    "autograd.backward": (ta.autograd.backward, torch.autograd.backward),
}
# torch's default is the same thing spelled differently
SAME = {("nn.TransformerEncoderLayer", "activation"): ("relu", torch.nn.functional.relu),
        ("nn.TransformerDecoderLayer", "activation"): ("relu", torch.nn.functional.relu),
        ("nn.Transformer", "activation"): ("relu", torch.nn.functional.relu),
        ("save", "pickle_module"): (None, __import__("pickle"))}  # None: the format's own pickler
POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def positional(signature):
    return [name for name, p in signature.parameters.items() if p.kind in POSITIONAL]


@pytest.mark.parametrize("name", PAIRS)
def test_arguments_names_order_and_defaults_are_torchs(name):
    ours, theirs = (inspect.signature(f) for f in PAIRS[name])
    assert positional(ours) == positional(theirs)[: len(positional(ours))], "a positional call would differ"
    for arg, p in ours.parameters.items():
        assert arg in theirs.parameters, f"{name}: torch has no argument {arg!r}"
        expected = theirs.parameters[arg].default
        if (name, arg) in SAME:
            assert (p.default, expected) == SAME[name, arg]
        else:
            assert p.default == expected, f"{name}({arg}=...): default {p.default!r}, torch's {expected!r}"
