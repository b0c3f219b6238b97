"""tinyattn.nn: modules, layers, losses and multi-head attention."""

from . import functional, init, parallel, utils
from .attention import MultiheadAttention
from .batchnorm import BatchNorm1d, BatchNorm2d
from .containers import ParameterDict, ParameterList
from .conv import (
    AvgPool1d,
    AvgPool2d,
    Conv1d,
    Conv2d,
    ConvTranspose1d,
    ConvTranspose2d,
    MaxPool1d,
    MaxPool2d,
)
from .layers import GELU, Dropout, Dropout2d, Embedding, LayerNorm, Linear, ReLU
from .losses import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module, ModuleDict, ModuleList, Sequential
from .parallel import DataParallel
from .parameter import Parameter
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .small_layers import (
    ELU,
    Flatten,
    Identity,
    LazyLinear,
    LeakyReLU,
    LogSoftmax,
    RMSNorm,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
    Unflatten,
)
from .transformer import LearnedPositionalEncoding, PositionalEncoding, TransformerEncoderLayer
from .transformer_stack import Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder
from .utils import clip_grad_norm_

__all__ = [
    "ELU", "HuberLoss", "LeakyReLU", "SmoothL1Loss", "Softplus",
    "BatchNorm1d", "BatchNorm2d",
    "AvgPool1d", "AvgPool2d", "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "ConvTranspose1d", "ConvTranspose2d",
    "DataParallel", "Dropout2d", "parallel",
    "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase",
    "Flatten",
    "Identity",
    "LazyLinear",
    "ParameterDict",
    "ParameterList",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "LogSoftmax",
    "RMSNorm",
    "Tanh",
    "Unflatten",
    "BCELoss",
    "BCEWithLogitsLoss",
    "KLDivLoss",
    "L1Loss",
    "NLLLoss",
    "CrossEntropyLoss",
    "GELU",
    "LearnedPositionalEncoding",
    "MSELoss",
    "PositionalEncoding",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "clip_grad_norm_",
    "Dropout",
    "Embedding",
    "LayerNorm",
    "Linear",
    "Module",
    "ModuleDict",
    "ModuleList",
    "MultiheadAttention",
    "Parameter",
    "ReLU",
    "Sequential",
    "functional",
    "utils",
    "init",
]
