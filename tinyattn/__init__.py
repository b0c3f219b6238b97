"""tinyattn: multi-head attention and every gradient through it, in readable NumPy.

    import tinyattn as ta
    x = ta.randn(3, 5, 16, requires_grad=True)

The namespace is torch's, so most PyTorch code runs after ``import tinyattn as torch``:
``torch.nn``, ``torch.optim``, ``torch.autograd``, the dtypes (``torch.float``, ``torch.long``...),
``torch.device`` (the CPU only) and ``torch.cuda.is_available()`` (False).
"""

import numpy as _np

if int(_np.__version__.split(".")[0]) < 2:
    # NumPy 1.x promotes a 0-d float32 array with a Python number to float64 (value-based
    # casting): `1 - out * out` in a backward would silently change dtype. NumPy 2 follows
    # NEP 50, as torch does: a Python number never widens a tensor.
    raise ImportError(f"tinyattn needs NumPy >= 2.0 (found {_np.__version__}): pip install 'numpy>=2'")

from . import (
    accelerator,
    amp,
    autograd,
    backends,
    compiler,
    cuda,
    distributed,
    distributions,
    func,
    jit,
    nn,
    onnx,
    optim,
    utils,
)
from .amp import autocast
from .autograd import *  # noqa: F403  (the tensors, factories, dtypes, devices and functions)
from .autograd import __all__ as _autograd_all
from .autograd.tensor import einsum  # noqa: F401
from .compiler import compile
from .func import vmap
from .serialization import load, save

# torch's dtype names that are Python builtins' names: bound here only, where nothing reads the builtins
float = _np.float32
int = _np.int32
bool = _np.bool_

__version__ = "0.1.0"

__all__ = [
    *(name for name in _autograd_all if name not in ("Context", "LeafNode", "Node", "unbroadcast", "backward",
                                                    "default_generator")),
    "accelerator", "amp", "autocast", "autograd", "backends", "bool", "compile", "compiler", "cuda", "distributed",
    "distributions",
    "float", "func", "int",
    "jit", "load", "nn", "onnx", "optim", "save", "utils", "vmap",
]
