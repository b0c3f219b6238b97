"""tinyattn.nn: modules, layers, losses and multi-head attention."""

from . import functional, init
from .attention import MultiheadAttention
from .layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU
from .module import Module, ModuleList, Sequential
from .parameter import Parameter

__all__ = [
    "GELU",
    "Dropout",
    "Embedding",
    "LayerNorm",
    "Linear",
    "Module",
    "ModuleList",
    "MultiheadAttention",
    "Parameter",
    "ReLU",
    "Sequential",
    "functional",
    "init",
]
