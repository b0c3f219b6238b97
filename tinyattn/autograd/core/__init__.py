"""The core of tinyattn's autograd: how gradients flow, and nothing else.

It runs alone: nothing in it is replaced at run time, whatever else is imported, and a core op on core tensors
returns a core tensor with a core node. Read it in this order.

1. ``function.py``: ``Function``, ``Context`` and ``Node``. An op is a ``forward`` and a ``backward`` on
   arrays; ``Function.apply`` runs forward and, when a gradient will be asked for, records a ``Node``: the op,
   what forward saved, and one edge per input, to the node that input's gradient flows into. Nodes and
   edges are the graph. ``TensorBase`` is what the graph reads of a tensor.
2. ``tensor.py``: ``Tensor``, an array with ``requires_grad``, ``grad_fn`` (the node that made it) and
   ``grad``; ``backward()``; the arithmetic operators, each one op. A leaf's gradient flows into a
   ``LeafNode``, which keeps it in ``.grad``.
3. ``engine.py``: the backward pass. ``topological_order`` lists the nodes so that each comes before every
   node that made one of its inputs; ``backward`` walks that list, runs each node's backward, and adds
   each input's gradient to the total of the node it flows into (the chain rule, and its sum over paths).
4. ``ops/``: every op, each a class with its formula in the docstring and ``forward`` and ``backward`` side by
   side. ``shared.py`` holds ``unbroadcast``: the gradient of a broadcast input is a sum over the copies.
   Begin with ``elementwise.py`` (``Add``, ``Mul``, ``Exp``), then ``matmul.py`` (``dA = dC Bᵀ``),
   ``reduction.py``, ``shape.py``, ``softmax.py`` (``dx = y (dy − Σ dy·y)``), and last
   ``flash_attention.py``: softmax attention as one op that never stores the attention matrix.

Beside them, three rooms the lesson calls by name, each a file of its own:

* ``checks.py``: every rule that guards the lesson (a gradient fits its input; dims are in range; shapes
  broadcast), each written once with its message;
* ``grad_mode.py``: ``no_grad`` and the explainer's recorder (``note_forward``, ``note_backward``);
* ``dtypes.py``: torch's type promotion and the default float dtype.

What torch adds (versions and views, hooks, ``create_graph``, ``retain_graph``, custom Functions on Tensors, the
arguments of ``backward`` and ``grad``, forward mode, and all of torch's methods) lives outside this folder, in
``tinyattn/autograd/``, built on it by ordinary means: a ``Tensor`` subclass whose ``node_class`` is a ``Node``
subclass, its own backward loop over ``topological_order``, and the same op classes. Nothing here imports
anything but the standard library, NumPy and this folder.
"""

from .engine import backward, topological_order
from .function import Context, Function, LeafNode, Node, TensorBase
from .ops.shared import unbroadcast
from .tensor import Tensor

__all__ = ["Context", "Function", "LeafNode", "Node", "Tensor", "TensorBase", "backward", "topological_order",
           "unbroadcast"]
