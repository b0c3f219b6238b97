"""An in-place change to a view inside a graph: the base's history is rewritten, as torch does ("rebase").

``v = y.reshape(-1)`` shares ``y``'s memory; ``v[mask] = -1e6`` (d2l's masked softmax) must change ``y``
too, and the gradient must know. With ``V`` the view (reshape, transpose, slicing: each element of
``y`` appears at most once in ``v``) and ``r`` the changed view, the new base is

    y' = y + Vᵀ(r - V(y))

(``Vᵀ`` puts a view-shaped tensor back into the base's shape, zeros elsewhere: the view op's own
backward, recorded as ``Transposed``). So the base's new ``grad_fn`` gets the gradient to ``r`` where
the view reaches and to the old ``y`` elsewhere; the view's own history becomes ``V(y')``. The values
are written into the base's memory, so every view of it sees them, and the version counter of the
base moves on, so an op that saved the old values refuses its backward.
"""

from __future__ import annotations

from typing import Any

from .core.function import Context, Function, Node
from .core.ops.elementwise import Cast, Clone
from .core.ops.shape import Expand, GetItem, Permute, Reshape, Squeeze, Transpose, Unsqueeze
from .higher_order import Transposed

# tinyattn's Tensor (tensor.py), which imports this file: named here for the reader, checked as Any
TensorLike = Any

# The ops whose result may share its input's memory: a view of it, with its version counter
VIEW_OPS = frozenset({Reshape, Transpose, Permute, Unsqueeze, Squeeze, Expand, GetItem})


def change_in_place(
    view: TensorLike, op: str, fn: type[Function], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """``view``'s value becomes ``fn(view, *args)``, recorded, with its base's history rewritten (see above)."""
    base = view._base
    assert base is not None  # (called for views only)
    if base._requires_grad and base._grad_fn is None:
        raise RuntimeError(f"{op}: a view of a leaf Variable that requires grad is being used in an in-place "
                           "operation (wrap it in `with ta.no_grad():`, or change a clone)")
    chain = _chain(op, view, base)
    result = fn.apply(Clone.apply(view), *args, **kwargs)  # (on a copy: what the op saves is not the shared memory)
    if result.dtype != view.dtype:  # (a float view, so a float result: it casts as torch's same_kind rule allows)
        result = Cast.apply(result, dtype=view.dtype)
    put_back = result - view  # (the change, in the view's shape)
    for view_fn, ctx in chain:  # Vᵀ: each view op's backward, from the view back to the base
        put_back = Transposed.apply(put_back, op=view_fn, op_ctx=ctx)
    new_base = base + put_back
    if base._grad_fn is not None:  # the op that made the base: if it saved its output, its backward now refuses
        base._grad_fn.output_changed(base.array)
    base.array[...] = new_base.array  # the base's memory: every view of it sees the new values
    base._grad_fn, base._requires_grad = new_base._grad_fn, True
    again = base
    for view_fn, ctx in reversed(chain):  # V(y'): the view's history, from the new base
        again = view_fn.apply(again, **ctx.kwargs)
    view._grad_fn, view._requires_grad = again._grad_fn, True


def _chain(op: str, view: TensorLike, base: TensorLike) -> list[tuple[type[Function], Context]]:
    """The view ops from ``view`` back to ``base``, each with its context; refused where torch refuses or the
    chain cannot be read (a view of a tensor outside the graph)."""
    target = base._grad_fn or base._leaf_node
    node: Node | None = view._grad_fn
    chain = []
    while node is not None and node is not target:
        if node.fn is Expand:
            raise RuntimeError(f"{op}: unsupported operation: more than one element of the written-to tensor "
                               "refers to a single memory location (an expanded view). Please clone() the tensor "
                               "before performing the operation.")
        if node.fn not in VIEW_OPS or node.ctx is None:
            break
        chain.append((node.fn, node.ctx))
        node = node.edges[0]
    if node is None:
        raise RuntimeError(f"{op}: an in-place change to a view of a tensor that does not require grad, with a "
                           "value that does, is not supported here; clone() the view first, or make the base "
                           "require grad")
    if node is not target:  # (torch rebuilds such a view's history from its base; here it is refused)
        raise RuntimeError(f"{op}: the view's history no longer leads to its base, which was changed in place (or "
                           "whose graph backward freed) since the view was made; take the view again from the base "
                           "before changing it")
    return chain
