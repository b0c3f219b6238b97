"""tinyattn.autograd: tensors, the ops, the backward engine, and gradcheck.

``core/`` is the lesson, and runs alone: the tensor, ``Function.apply`` and ``Node``, the engine, the ops and
the chapter's multi-head attention (its ``__init__`` gives the reading order). Around it, built on it by ordinary
means, each importing only what lies below it:

* ``arrays`` (data to arrays, sizes, the random generator), ``tangents`` (forward mode's level and each op's
  tangent), ``hooks`` and ``graph`` (the node with torch's version check, freeing, recorded backward and hooks);
* ``backprop`` (torch's backward loop: the core's, with hooks, ``create_graph`` and freeing at each node),
  ``higher_order`` (a backward recorded as ops, for ``create_graph=True``) and ``engine`` (torch's
  ``backward`` and ``grad``, with all their arguments);
* ``tensor``: the ``Tensor`` users get, a subclass of the core's whose ``node_class`` is ``graph``'s, with
  every method of torch's (its docstring says where a method lives);
* ``custom_function`` (torch's ``Function``, on Tensors), ``views`` (an in-place change to a view),
  ``gradcheck``, ``functional`` (torch.autograd.functional), ``creation`` (the factories), ``devices``,
  ``legacy`` and ``namespace`` (torch's ``torch.exp(x)`` spellings of the methods).
"""

# tensor first: a type checker then reads `autograd.tensor` as the function imported below, not the module.
from .tensor import Tensor, cat, chunk, split, stack, where  # isort: skip
from . import function  # noqa: F401  # isort: skip
from .core.dtypes import (
    bfloat16,
    bool_,
    complex64,
    complex128,
    double,
    e,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    iinfo,
    inf,
    int8,
    int16,
    int32,
    int64,
    is_floating_point,
    long,
    nan,
    pi,
    set_default_dtype,
    short,
    uint8,
)
from .core.function import Context, LeafNode, Node
from .core.grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .core.ops.shared import unbroadcast
from .creation import (
    Generator,
    arange,
    as_tensor,
    default_generator,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    initial_seed,
    linspace,
    manual_seed,
    multinomial,
    normal,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    tensor,
    zeros,
    zeros_like,
)
from .custom_function import Function, FunctionCtx, once_differentiable
from .devices import device, get_default_device, set_default_device
from .engine import backward, grad
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .legacy import (
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    Variable,
)

from . import functional  # noqa: F401, E402  # isort: skip  (torch.autograd.functional: vjp, jvp, hessian...)
from . import forward_ad  # noqa: F401, E402  # isort: skip  (torch.autograd.forward_ad: dual_level, make_dual...)
from .namespace import *  # noqa: F403  (torch.exp(x) and the rest: see namespace.__all__)
from .namespace import __all__ as _namespace_all
from .printing import Size, set_printoptions

__all__ = [
    "Context", "Function", "Generator", "GradcheckError", "LeafNode", "Node", "Tensor", "arange", "as_tensor",
    "backward", "bfloat16", "bool_", "cat", "chunk", "complex64", "complex128", "default_generator", "device",
    "double", "e", "empty", "empty_like", "enable_grad", "eye", "finfo", "float16", "float32", "float64",
    "from_numpy", "full", "full_like", "get_default_device", "get_default_dtype", "grad", "gradcheck", "gradgradcheck",
    "half", "iinfo", "inf", "inference_mode", "initial_seed", "int8", "int16", "int32", "int64", "is_floating_point",
    "is_grad_enabled", "linspace", "long", "manual_seed", "multinomial", "nan", "no_grad", "normal", "ones",
    "ones_like", "pi", "rand", "rand_like", "randint", "randint_like", "randn", "randn_like", "randperm", "seed",
    "set_default_device", "set_default_dtype", "set_grad_enabled", "short", "split", "stack", "tensor", "uint8",
    "unbroadcast", "where", "zeros", "zeros_like", "Size", "set_printoptions", *_namespace_all,
    "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor", "IntTensor", "LongTensor",
    "ShortTensor", "Variable", "FunctionCtx", "once_differentiable",
]
