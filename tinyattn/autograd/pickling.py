"""Copies and pickles of tensors, as torch makes them: the values and ``requires_grad``, never the graph.

``copy.deepcopy`` and ``pickle`` reach tensors through models, optimizers and checkpoints (a
target network, the best model so far, a DataLoader's worker). A tensor's graph state (its
``grad_fn``, the node its gradient flows into, the version counter it shares with its views)
belongs to the original: copied along, a copy's backward would accumulate into the original's
``.grad``. So, as in torch:

* ``deepcopy`` of a leaf makes a new leaf with a copy of the values, ``requires_grad``, the
  Python attributes set on it, and (for a plain tensor, not a ``Parameter``) a copy of ``.grad``;
  ``deepcopy`` of a tensor an op made (``grad_fn`` set) is refused, with torch's message;
* ``pickle`` keeps the values, the type (``Parameter`` stays one), ``requires_grad`` and the
  Python attributes; ``.grad`` and the graph are not kept, so a loaded tensor is a leaf.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

# tinyattn's Tensor (tensor.py), which imports this file: named here for the reader, checked as Any
TensorLike = Any

# The tensor's own state: its value, and the graph's (which stays with the original)
_OWN = frozenset({"array", "_requires_grad", "_grad", "_grad_fn", "_leaf_node", "_changes", "_base"})


def deepcopy(tensor: TensorLike, memo: dict[int, Any], keep_grad: bool = True) -> TensorLike:
    """``copy.deepcopy(tensor)``: a new leaf (see the module's docstring); its ``.grad`` copied too, unless not
    ``keep_grad`` (torch's Parameter leaves it behind)."""
    if tensor.grad_fn is not None:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                           "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                           "because of a torch.nn.utils.weight_norm usage, see "
                           "https://github.com/pytorch/pytorch/pull/103001")
    kind: Any = type(tensor)
    new = kind.__new__(kind)
    memo[id(tensor)] = new
    new.array = copy.deepcopy(tensor.array, memo)
    new._requires_grad = tensor._requires_grad
    if tensor._grad is not None and keep_grad:
        new._grad = deepcopy(tensor._grad, memo)
    for name, value in vars(tensor).items():
        if name not in _OWN:
            setattr(new, name, copy.deepcopy(value, memo))
    return new


def reduce(tensor: TensorLike) -> tuple[Any, ...]:
    """``pickle``'s recipe for ``tensor`` (see the module's docstring)."""
    extra = {name: value for name, value in vars(tensor).items() if name not in _OWN}
    return rebuild, (type(tensor), np.array(tensor.array), tensor._requires_grad, extra)


def rebuild(cls: type, array: np.ndarray, requires_grad: bool, extra: dict[str, Any]) -> TensorLike:
    """A pickled tensor, loaded: a leaf of ``cls`` holding ``array``."""
    tensor = cls._make(array, requires_grad)  # type: ignore[attr-defined]
    for name, value in extra.items():
        setattr(tensor, name, value)
    return tensor
