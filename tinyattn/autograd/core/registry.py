"""The classes the core makes, registered from above, so that the lesson never imports them.

``Function.apply`` wraps each result in a tensor and, when it records, makes a node; a leaf's gradient flows
into a leaf node. The core's own classes register themselves (``function.py``, ``tensor.py``);
tinyattn's torch-like ``Tensor`` and its nodes (``autograd/tensor.py``, ``autograd/graph.py``), built on
them, register in turn, and from then on the core makes those.
"""

from __future__ import annotations

from typing import Any

TensorBase: Any = None  # the core's tensor: apply takes the array out of any input of this class
Tensor: Any = None  # the class of apply's results: the core's tensor, or a class built on it
Node: Any = None  # the class of the nodes apply records
LeafNode: Any = None  # the class of a leaf's node


def register(tensor: Any = None, node: Any = None, leaf: Any = None) -> None:
    """Make the core's tensors of class ``tensor``, its nodes of class ``node``, its leaves' nodes of class ``leaf``;
    each must be built on the class it replaces."""
    global TensorBase, Tensor, Node, LeafNode
    if tensor is not None:
        if TensorBase is None:
            TensorBase = tensor
        Tensor = _replacing(Tensor, tensor)
    if node is not None:
        Node = _replacing(Node, node)
    if leaf is not None:
        LeafNode = _replacing(LeafNode, leaf)


def _replacing(old: Any, new: type) -> type:
    """``new``, if it is built on ``old`` (the class it replaces, None for the first)."""
    if old is not None and not issubclass(new, old):
        raise TypeError(f"register: {new.__name__} is not built on {old.__name__}")
    return new
