"""Functions written as torch's docs write them ("Extending PyTorch"): ``forward`` and ``backward`` on Tensors.

tinyattn's own ops compute on arrays (``core/ops/``, built on the core's ``Function``). ``Function`` here,
torch's, is built on that one, and its ``apply`` gives a subclass torch's contract instead (``run``):

* ``forward(ctx, *args)`` receives the Tensors themselves (and any other argument as it is), runs
  with grad mode off, and returns a Tensor or a tuple of them;
* ``ctx.save_for_backward(*tensors)`` / ``ctx.saved_tensors``, ``ctx.needs_input_grad``,
  ``ctx.mark_non_differentiable(*outputs)`` and ``ctx.set_materialize_grads(False)`` work as torch's;
* ``backward(ctx, *grad_outputs)`` receives one Tensor per output and returns one gradient (a
  Tensor, or None) per input of ``forward``;
* for forward mode (``forward_ad``), ``jvp(ctx, *tangents)`` receives one tangent per input of ``forward``
  (zeros for a Tensor without one, None for any other argument) and returns one per output; what
  ``ctx.save_for_forward(*tensors)`` kept is its ``ctx.saved_tensors``.

The call is recorded as one op, ``CustomCall``, whose backward calls the user's. Several outputs are
stored end to end in one flat array, each output a slice of it reshaped (ops with their own
backward), so that the engine hands ``CustomCall`` one gradient: the outputs' gradients end to end.
With ``create_graph=True`` the user's backward runs on Tensors that record, so a backward written in
differentiable ops is differentiated again, as in torch (unless marked ``@once_differentiable``).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from . import tangents
from .core import function as core
from .core import grad_mode
from .core.checks import broadcasts_to
from .core.function import Context
from .core.ops.shared import cast, unbroadcast
from .tensor import Tensor


class Function(core.Function):
    """torch's ``torch.autograd.Function``: subclass it to write your own op.

    A Function of yours gets torch's contract (Tensors in and out, the module's docstring), unless it says
    ``on_arrays = True``: then it is an op like tinyattn's own (``core/ops/``), forward and backward on arrays::

        class Square(Function):
            on_arrays = True

            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x
            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                return (2 * x * grad_output,)

    With ``create_graph=True`` the backward runs again on Tensors (higher_order.py); a backward that reads the
    op's own output gets it there as the output, history and all (a Function on arrays notes where it saved it).
    """

    on_arrays = False

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """torch's ``apply``: ``run``, forward on the Tensors, recorded as one op.

        A Function ``on_arrays`` is applied as the core applies its ops, and its context notes where forward
        saved its output, if it did."""
        if not cls.on_arrays:
            return run(cls, *args, **kwargs)
        result = super().apply(*args, **kwargs)
        node = result.grad_fn
        if node is not None and "saved_output" not in vars(cls):
            node.ctx.saved_output = _saved_output(node.ctx, result.array)
        return result

    def __call__(self, *args: Any) -> Any:
        """Refused, as torch: an instance called as a function is the pre-0.4 style."""
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")


def _saved_output(ctx: Context, out: np.ndarray) -> int | None:
    """Where forward saved its output ``out`` in ``ctx.saved_tensors`` (None if it did not): a backward recorded as
    ops (higher_order.py) reads that array as the output."""
    for i, saved in enumerate(ctx.saved_tensors):
        if saved is out:
            return i
    return None


class FunctionCtx(Context):
    """The ``ctx`` of a Function written on Tensors: what ``forward`` leaves for ``backward``."""

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep ``tensors`` (Tensors or None) for ``backward``; a change to one in place before then is refused."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {tensors.index(t)} is "
                                f"of type {type(t).__name__}")
        self.saved_tensors = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Keep ``tensors`` for ``jvp`` (forward mode), which reads them as ``ctx.saved_tensors``."""
        self.forward_saved = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """These outputs get no gradient (an index, a mask): they come out with ``requires_grad=False``."""
        self.non_differentiable = tuple(self.non_differentiable) + tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` receives None (not zeros) for an output that got no gradient."""
        self.materialize_grads = value

    def mark_dirty(self, *tensors: Tensor) -> None:
        """In-place changes inside ``forward`` are not supported here: refused, with what to do."""
        raise NotImplementedError("ctx.mark_dirty: a custom Function that changes its inputs in place is not "
                                  "supported in tinyattn; return a new tensor from forward instead")

    non_differentiable: tuple[Tensor, ...] = ()
    materialize_grads = True
    forward_saved: tuple[Any, ...] | None = None
    tensor_args: tuple[bool, ...] = ()  # which of forward's arguments are Tensors (jvp gets None for the others)


def once_differentiable(backward: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a ``backward`` as not differentiable itself: run with grad mode off; a second derivative refused."""

    @functools.wraps(backward)
    def wrapped(ctx: Any, *grad_outputs: Any) -> Any:
        recording = grad_mode.is_grad_enabled()  # (create_graph=True: the gradients would get a graph)
        with grad_mode.no_grad():
            grads = backward(ctx, *grad_outputs)
        if not recording:
            return grads
        sources = [t for t in grad_outputs if isinstance(t, Tensor) and t.requires_grad]  # (as torch: only these)
        single = not isinstance(grads, tuple)
        marked = tuple(g if not isinstance(g, Tensor) or not sources else
                       DifferentiatedTwice.apply(g, *sources, name=backward.__qualname__)
                       for g in ((grads,) if single else grads))
        return marked[0] if single else marked

    return wrapped


class DifferentiatedTwice(core.Function):
    """What a ``@once_differentiable`` backward returns under ``create_graph``: its value, and a backward
    that refuses (torch's error, raised when the gradient is differentiated)."""

    formula = "{out} = {0}  (a once-differentiable gradient)"
    grad_formulas = ("refused: the backward that made {0} is marked @once_differentiable",)

    @staticmethod
    def forward(ctx: Context, grad: np.ndarray, *sources: np.ndarray, name: str) -> np.ndarray:
        """The gradient, unchanged."""
        return grad

    @staticmethod
    def backward(ctx: Context, grad_output: Any) -> tuple[Any, ...]:
        """Refused."""
        raise RuntimeError(f"trying to differentiate twice a function that was marked with @once_differentiable "
                           f"({ctx.kwargs['name']})")


def run(cls: type[Function], *args: Any, **kwargs: Any) -> Any:
    """torch's ``Function.apply``: ``forward`` on the Tensors, the call recorded as one ``CustomCall`` op."""
    ctx = FunctionCtx()
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    ctx.tensor_args = tuple(isinstance(a, Tensor) for a in args)
    with grad_mode.no_grad():
        out: Any = cls.forward(ctx, *args, **kwargs)
    single = not isinstance(out, tuple)
    outputs = (out,) if single else out
    if not all(isinstance(o, Tensor) or o is None for o in outputs):
        bad = next(o for o in outputs if not isinstance(o, Tensor) and o is not None)
        raise TypeError(f"{cls.__name__}.forward must return Tensors (or a tuple of them), got "
                        f"{type(bad).__name__}; a Function on arrays is a tinyattn op (see autograd/core/ops/)")
    skip = {id(t) for t in ctx.non_differentiable}
    wanted = [i for i, o in enumerate(outputs) if o is not None and id(o) not in skip and o.is_floating_point()]
    if not (grad_mode.is_grad_enabled() and any(ctx.needs_input_grad) and wanted):
        results = tuple(None if o is None else Tensor._make(o.array) for o in outputs)
        if any(getattr(a, "_fw_tangent", None) is not None for a in args):  # forward mode, nothing recorded
            given = [None if t is None else t.array for t in (a._fw_tangent if isinstance(a, Tensor) else None
                                                               for a in args)]
            primals = tuple(a.array if isinstance(a, Tensor) else a for a in args)
            filled = tuple(tangents.zero_tangent(p) if t is None else t for p, t in zip(primals, given))
            for r, t in zip(results, user_tangents(cls, ctx, filled)):
                if r is not None and t is not None:
                    tangents.carry(r, Tensor._make(np.asarray(t.array if isinstance(t, Tensor) else t, dtype=r.dtype)))
        return results[0] if single else results
    dtype = np.result_type(*(outputs[i].dtype for i in wanted))
    packed = np.concatenate([outputs[i].array.astype(dtype).reshape(-1) for i in wanted])
    layout = [(i, outputs[i].shape, outputs[i].dtype) for i in wanted]
    call = CustomCall.apply(*args, fn=cls, user_ctx=ctx, packed=packed, layout=layout, count=len(outputs))
    results_list: list[Any] = [None if o is None else Tensor._make(o.array) for o in outputs]
    start = 0
    for i, shape, out_dtype in layout:
        size = int(np.prod(shape))
        piece = call if len(layout) == 1 else call[start:start + size]
        piece = piece.reshape(shape)
        results_list[i] = piece if piece.dtype == out_dtype else piece.to(out_dtype)
        start += size
    # a saved output is the output returned (its history and all: a second derivative reaches through it)
    returned = {id(o): r for o, r in zip(outputs, results_list) if o is not None}
    ctx.saved_tensors = tuple(returned.get(id(t), t) for t in ctx.saved_tensors)
    # what the user saved, with its versions now: the node's own check refuses its backward if one changes
    call._grad_fn.saved_versions = tuple((t, t._version) for t in ctx.saved_tensors if t is not None)
    return results_list[0] if single else tuple(results_list)


class CustomCall(core.Function):
    """One call of a Function written on Tensors: forward already ran; backward calls the user's backward."""

    formula = "{out} = a custom Function's forward"
    grad_formulas = ("d{i} = the custom Function's backward",)

    @staticmethod
    def forward(ctx: Context, *arrays: Any, fn: type[Function], user_ctx: FunctionCtx, packed: np.ndarray,
                layout: list, count: int) -> np.ndarray:
        """The outputs, already computed by the user's forward, end to end."""
        ctx.input_shapes = tuple(np.shape(a) for a in arrays)  # (what each input's gradient must fit)
        ctx.input_dtypes = tuple(getattr(a, "dtype", None) for a in arrays)
        return packed

    @staticmethod
    def jvp(tangents: tuple[Any, ...], inputs: tuple[Any, ...], out: np.ndarray, *, fn: type[Function],
            user_ctx: FunctionCtx, packed: np.ndarray, layout: list, count: int) -> np.ndarray:
        """The user's jvp: each output's tangent, end to end as the outputs are."""
        outs = user_tangents(fn, user_ctx, tangents)
        pieces = []
        for i, shape, _ in layout:
            t = outs[i] if i < len(outs) else None
            t = np.zeros(shape, packed.dtype) if t is None else np.asarray(t.array if isinstance(t, Tensor) else t)
            if t.shape != tuple(shape):
                raise RuntimeError(f"{fn.__name__}.jvp returned a tangent of shape {t.shape} for output {i} of shape "
                                   f"{tuple(shape)}")
            pieces.append(t.astype(packed.dtype).reshape(-1))
        return np.concatenate(pieces)

    @staticmethod
    def backward(ctx: Context, grad_output: Any) -> tuple[Any, ...]:
        """The user's backward, given each output's gradient; its gradients checked and made arrays (or Tensors)."""
        fn, user_ctx = ctx.kwargs["fn"], ctx.kwargs["user_ctx"]
        layout, count = ctx.kwargs["layout"], ctx.kwargs["count"]
        recording = isinstance(grad_output, Tensor)
        flat = grad_output if recording else Tensor._make(grad_output)
        grads: list[Any] = [None] * count
        start = 0
        for i, shape, dtype in layout:
            size = int(np.prod(shape))
            piece = flat[start:start + size].reshape(shape) if len(layout) > 1 else flat.reshape(shape)
            grads[i] = piece if piece.dtype == dtype else piece.to(dtype)
            start += size
        with grad_mode.set_grad_enabled(recording):
            result = fn.backward(user_ctx, *grads)
        result = result if isinstance(result, tuple) else (result,)
        needs = ctx.needs_input_grad
        if len(result) < len(needs) or any(g is not None for g in result[len(needs):]):
            raise RuntimeError(f"function {fn.__name__}Backward returned an incorrect number of gradients "
                               f"(expected {len(needs)}, got {len(result)})")
        out: list[Any] = []
        for index, (g, need) in enumerate(zip(result, needs)):
            if g is None or not need:
                out.append(None)
                continue
            if recording:
                g = g if isinstance(g, Tensor) else Tensor._make(np.asarray(g))
            else:
                g = np.asarray(g.array if isinstance(g, Tensor) else g)
            out.append(_fitted(fn, index, g, ctx.input_shapes[index], ctx.input_dtypes[index]))
        return tuple(out)


def user_tangents(fn: type[Function], user_ctx: FunctionCtx, tangents: tuple[Any, ...]) -> tuple[Any, ...]:
    """The user's ``jvp(ctx, *tangents)`` (a tangent per input of forward, None for an argument that is not a
    Tensor): one tangent per output, as a tuple. Refused, as torch, if the Function has none."""
    if getattr(fn.jvp, "__func__", None) is core.Function.__dict__["jvp"].__func__:  # (the base's: none of its own)
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  f"forward mode AD ({fn.__name__}).")
    given = tuple(None if not is_tensor else Tensor._make(np.asarray(t))
                  for t, is_tensor in zip(tangents, user_ctx.tensor_args))
    saved = user_ctx.saved_tensors
    if user_ctx.forward_saved is not None:
        user_ctx.saved_tensors = user_ctx.forward_saved
    try:
        result = fn.jvp(user_ctx, *given)
    finally:
        user_ctx.saved_tensors = saved
    return result if isinstance(result, tuple) else (result,)


def _fitted(fn: type[Function], index: int, grad: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """A user's gradient for input ``index`` made to fit it, as torch does: summed down to the input's shape if it
    was broadcast, cast to the input's dtype; refused with torch's message if the shapes do not fit."""
    if grad.shape != shape:
        if not broadcasts_to(shape, grad.shape):
            raise RuntimeError(f"Function {fn.__name__}Backward returned an invalid gradient at index {index} - got "
                               f"{list(grad.shape)} but expected shape compatible with {list(shape)}")
        grad = unbroadcast(grad, shape)
    if grad.dtype != dtype:
        grad = cast(grad, dtype)
    return grad

