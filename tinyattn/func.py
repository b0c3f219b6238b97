"""torch.func: derivatives as functions. ``grad(f)`` is a new function that returns ``f``'s gradient.

Each transform takes a function and returns one, so they compose: ``vmap(grad(loss))`` gives one gradient per
sample, ``jacfwd(jacrev(f))`` the Hessian. They are built on what tinyattn already has, and say which:

* ``grad``, ``grad_and_value``, ``vjp`` and ``jacrev`` run reverse mode (``autograd.grad``): one backward
  pass per output element (``jacrev``) or per call (``grad``, ``vjp``);
* ``jvp`` and ``jacfwd`` run forward mode (``autograd.forward_ad``): one forward pass per input element
  (``jacfwd``) or per call (``jvp``);
* ``hessian(f)`` is ``jacfwd(jacrev(f))``: forward mode over reverse mode;
* ``vmap`` runs the function once per sample and stacks the results (a loop: see its docstring);
* ``functional_call`` runs a Module with other tensors in place of its parameters and buffers.

The inputs need not require grad: each transform differentiates with respect to stand-ins of the inputs it is
asked about. A stand-in keeps the input's history and tangent, so that an outer transform differentiates
through an inner one (``grad(grad(f))``, ``jacfwd(jacrev(f))``, ``vmap(grad(f))``). Inputs and outputs may be
tensors or tuples, lists and dicts of them (pytrees), as in ``grad(loss)(params_dict, x, y)``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from .autograd import creation, forward_ad, tangents
from .autograd.core.grad_mode import enable_grad
from .autograd.engine import grad as autograd_grad
from .autograd.tensor import Tensor, stack

__all__ = ["functional_call", "functionalize", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "stack_module_state", "vjp", "vmap"]


# -- pytrees: nested tuples, lists and dicts with tensors (or anything else) at the leaves ---------------------


def _flatten(tree: Any) -> tuple[list[Any], Any]:
    """The leaves of ``tree`` in order, and its structure, for ``_unflatten``."""
    if isinstance(tree, (tuple, list)):
        leaves: list[Any] = []
        specs = []
        for item in tree:
            item_leaves, spec = _flatten(item)
            leaves.extend(item_leaves)
            specs.append((len(item_leaves), spec))
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves, spec = _flatten(list(tree.values()))
        return leaves, (dict, (list(tree.keys()), spec))
    return [tree], None


def _unflatten(spec: Any, leaves: Sequence[Any]) -> Any:
    """The tree of structure ``spec`` with ``leaves`` at its leaves."""
    if spec is None:
        return leaves[0]
    kind, parts = spec
    if kind is dict:
        keys, inner = parts
        return dict(zip(keys, _unflatten(inner, leaves)))
    items, start = [], 0
    for count, item_spec in parts:
        items.append(_unflatten(item_spec, leaves[start:start + count]))
        start += count
    return tuple(items) if kind is tuple else kind(items) if kind is not list else items


# -- stand-ins: what a transform differentiates with respect to ---------------------------------------------------


def _stand_in(x: Any, fn: str) -> Tensor:
    """A tensor with ``x``'s value that requires grad and keeps ``x``'s history and tangent (see the module)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}: expected the differentiated inputs to be Tensors, got {type(x).__name__}")
    if not x.is_floating_point():
        raise RuntimeError(f"{fn}: only Tensors of floating point dtype can require gradients, got {x.dtype}")
    if x.requires_grad:  # an outer reverse transform's stand-in: a view of it keeps its history
        return x.view_as(x)
    tangent = x._fw_tangent
    leaf = x.detach().requires_grad_()
    if tangent is not None:  # an outer forward transform's dual: the stand-in carries its tangent
        return forward_ad.make_dual(leaf, tangent)
    return leaf


def _argnums_tuple(argnums: int | tuple[int, ...], count: int, fn: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums or not all(isinstance(n, int) for n in nums):
        raise RuntimeError(f"{fn}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    for n in nums:
        if not -count <= n < count:
            raise RuntimeError(f"{fn}: Got argnums={n}, but only {count} positional inputs")
    return tuple(n % count for n in nums)


def _with_stand_ins(args: tuple[Any, ...], argnums: tuple[int, ...], fn: str) -> tuple[list[Any], list[Any]]:
    """``args`` with every tensor of the differentiated ones replaced by a stand-in; and those stand-ins' trees."""
    new_args = list(args)
    trees = []
    for n in argnums:
        leaves, spec = _flatten(args[n])
        new_args[n] = _unflatten(spec, [_stand_in(leaf, fn) for leaf in leaves])
        trees.append(new_args[n])
    return new_args, trees


def _split_aux(out: Any, has_aux: bool, fn: str) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{fn}(f)(*args): output of function f should be a tuple: (output, aux) if has_aux is "
                           "True")
    return out


def _detached(tree: Any) -> Any:
    """An auxiliary output, cut from the graph unless an outer transform differentiates it."""
    leaves, spec = _flatten(tree)
    return _unflatten(spec, [t.detach() if isinstance(t, Tensor) and not t.requires_grad else t for t in leaves])


def _gradients(outputs: Sequence[Tensor], wrt: Sequence[Tensor], cotangents: Sequence[Any]) -> list[Tensor]:
    """``Σ_i cotangent_iᵀ d output_i / d wrt`` for each of ``wrt``, zeros where there is no path; recorded (so that
    an outer transform can differentiate it) when something outside this transform requires grad."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    outer = (tangents.is_open() or any(getattr(c, "requires_grad", False) for c in cotangents)
             or _reaches_outside([o for o, _ in pairs], wrt))
    if not pairs:
        return [Tensor._make(np.zeros(w.shape, w.dtype)) for w in wrt]
    grads = autograd_grad([o for o, _ in pairs], list(wrt), [c for _, c in pairs], create_graph=outer,
                          retain_graph=True, allow_unused=True, materialize_grads=True)
    return [g for g in grads if g is not None]  # (materialize_grads: none is None)


def _reaches_outside(outputs: Sequence[Tensor], wrt: Sequence[Tensor]) -> bool:
    """True if the graph of ``outputs`` reaches a tensor that requires grad other than ``wrt``: a parameter, or an
    outer transform's input, whose gradient an outer pass may still ask for."""
    own = {id(w) for w in wrt}
    stack: list[Any] = [o.grad_fn for o in outputs if o.grad_fn is not None]
    seen = set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if not node.edges:  # a leaf's node: whose leaf?
            leaf = node.retained() if node.retained is not None else None
            if leaf is not None and id(leaf) not in own:
                return True
        stack.extend(node.edges)
    return False


# -- reverse mode -------------------------------------------------------------------------------------------------


def grad_and_value(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """``func``'s gradient with respect to ``args[argnums]`` (a tensor, or a pytree of them), and its value:
    ``(grad, value)``, or ``(grad, (value, aux))`` with ``has_aux``. ``func`` returns one element."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums_tuple(argnums, len(args), "grad_and_value")
        with enable_grad():
            new_args, trees = _with_stand_ins(args, nums, "grad_and_value")
            out, aux = _split_aux(func(*new_args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(out).__name__}")
            if out.numel() != 1:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   "instead?")
            leaves, spec = _flatten(trees)
            grads = _gradients([out], leaves, [Tensor._make(np.ones(out.shape, out.dtype))])
        result = _unflatten(spec, grads)
        result = result[0] if isinstance(argnums, int) else tuple(result)
        value = out if out.requires_grad and any(t.grad_fn is not None for t in leaves) else out.detach()
        return (result, (value, _detached(aux))) if has_aux else (result, value)

    return wrapper


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """A function that returns ``func``'s gradient with respect to ``args[argnums]``.

    ``func`` returns one element (a loss); with ``has_aux`` it returns ``(loss, aux)`` and the gradient comes as
    ``(grad, aux)``."""
    with_value = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        gradient, value = with_value(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives ``cotangentsᵀ J``, one per primal (a tuple)."""
    with enable_grad():
        new_args, trees = _with_stand_ins(primals, tuple(range(len(primals))), "vjp")
        out, aux = _split_aux(func(*new_args), has_aux, "vjp")
    out_leaves, out_spec = _flatten(out)
    wrt, wrt_spec = _flatten(trees)

    def vjp_fn(cotangents: Any, retain_graph: bool = True, create_graph: bool = False) -> tuple[Any, ...]:
        cot_leaves, cot_spec = _flatten(cotangents)
        if len(cot_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function: {len(cot_leaves)} cotangents for {len(out_leaves)} outputs")
        for o, c in zip(out_leaves, cot_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"vjp: a cotangent of shape {tuple(c.shape)} for an output of shape "
                                   f"{tuple(o.shape)}: they must match")
        with enable_grad():
            grads = _gradients(out_leaves, wrt, cot_leaves)
        return tuple(_unflatten(wrt_spec, grads))

    value = _detached(out) if not any(t.grad_fn is not None for t in _flatten(primals)[0]
                                      if isinstance(t, Tensor)) else out
    return (value, vjp_fn, _detached(aux)) if has_aux else (value, vjp_fn)


def jacrev(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable[..., Any]:
    """A function that returns ``func``'s Jacobian with respect to ``args[argnums]``, by reverse mode.

    One backward per output element (a row); each block has shape ``output.shape + input.shape``. ``chunk_size``
    is torch's batching of those rows; here every row is its own pass, whatever it is."""

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        nums = _argnums_tuple(argnums, len(args), "jacrev")
        with enable_grad():
            new_args, trees = _with_stand_ins(args, nums, "jacrev")
            out, aux = _split_aux(func(*new_args), has_aux, "jacrev")
            out_leaves, out_spec = _flatten(out)
            wrt, wrt_spec = _flatten(trees)
            per_output = []
            for o in out_leaves:
                rows: list[list[Tensor]] = [[] for _ in wrt]
                for k in range(o.numel()):
                    basis = np.zeros(o.numel(), o.dtype)
                    basis[k] = 1
                    for acc, g in zip(rows, _gradients([o], wrt, [Tensor._make(basis.reshape(o.shape))])):
                        acc.append(g)
                jac = [_stacked(acc, o.shape, w) for acc, w in zip(rows, wrt)]
                per_input = _unflatten(wrt_spec, jac)
                per_output.append(per_input[0] if isinstance(argnums, int) else tuple(per_input))
        result = _unflatten(out_spec, per_output)
        return (result, _detached(aux)) if has_aux else result

    return wrapper


def _stacked(pieces: list[Tensor], out_shape: tuple[int, ...], like: Tensor) -> Tensor:
    """One Jacobian block: ``pieces`` (one per output element, each shaped as the input) as ``out + in`` shape."""
    if not pieces:
        return Tensor._make(np.zeros(tuple(out_shape) + tuple(like.shape), like.dtype))
    return stack(pieces).reshape(tuple(out_shape) + tuple(like.shape))


# -- forward mode -------------------------------------------------------------------------------------------------


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple[Any, ...]:
    """``(func(*primals), J tangents)`` by forward mode: one pass, each primal carrying its tangent."""
    for name, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, tuple):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected {name} to be a tuple. E.g. it should be valid "
                               "to call f(*primals).")
    p_leaves, p_spec = _flatten(primals)
    t_leaves, _ = _flatten(tangents)
    if len(p_leaves) != len(t_leaves):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           f"structure, got {len(p_leaves)} primals and {len(t_leaves)} tangents")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same shape, "
                               f"got {tuple(p.shape)} and {tuple(t.shape)}")
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(p, t) for p, t in zip(p_leaves, t_leaves)]
        out, aux = _split_aux(func(*_unflatten(p_spec, duals)), has_aux, "jvp")
        out_leaves, out_spec = _flatten(out)
        values, outs = [], []
        for o in out_leaves:
            primal, tangent = forward_ad.unpack_dual(o)
            values.append(primal)
            outs.append(tangent if tangent is not None else Tensor._make(np.zeros(o.shape, o.dtype)))
    result = (_unflatten(out_spec, values), _unflatten(out_spec, outs))
    return result + (aux,) if has_aux else result


def jacfwd(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable[..., Any]:
    """A function that returns ``func``'s Jacobian with respect to ``args[argnums]``, by forward mode.

    One forward pass per input element (a column); each block has shape ``output.shape + input.shape``. Inside
    another forward transform (``jacfwd(jacfwd(f))``: forward mode has one level at a time here), the same
    Jacobian is computed by reverse mode, ``jacrev``, whose backward passes carry the outer level's tangents."""

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        if tangents.is_open():
            return jacrev(func, argnums, has_aux=has_aux)(*args)
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        wrt_trees = [args[n] for n in nums]
        wrt, wrt_spec = _flatten(wrt_trees)
        for w in wrt:
            if not isinstance(w, Tensor) or not w.is_floating_point():
                raise RuntimeError(f"jacfwd: expected the differentiated inputs to be floating point Tensors, got "
                                   f"{getattr(w, 'dtype', type(w).__name__)}")
        columns: list[list[list[Tensor]]] = []  # [input][element] -> the output leaves' tangents
        out_spec: Any = None
        out_leaves: list[Tensor] = []
        aux = None
        for i, w in enumerate(wrt):
            per_element = []
            for j in range(w.numel()):
                direction = np.zeros(w.numel(), w.dtype)
                direction[j] = 1
                with forward_ad.dual_level():
                    leaves = list(wrt)
                    leaves[i] = forward_ad.make_dual(w, Tensor._make(direction.reshape(w.shape)))
                    new_args = list(args)
                    for n, tree in zip(nums, _unflatten(wrt_spec, leaves)):
                        new_args[n] = tree
                    out, aux = _split_aux(func(*new_args), has_aux, "jacfwd")
                    out_leaves, out_spec = _flatten(out)
                    column = []
                    for o in out_leaves:
                        t = forward_ad.unpack_dual(o).tangent
                        column.append(t if t is not None else Tensor._make(np.zeros(o.shape, o.dtype)))
                    out_leaves = [forward_ad.unpack_dual(o).primal for o in out_leaves]
                per_element.append(column)
            columns.append(per_element)
        if out_spec is None:  # (no input elements: evaluate once for the output's shapes)
            out, aux = _split_aux(func(*args), has_aux, "jacfwd")
            out_leaves, out_spec = _flatten(out)
        per_output = []
        for k, o in enumerate(out_leaves):
            blocks = []
            for i, w in enumerate(wrt):
                pieces = [columns[i][j][k] for j in range(w.numel())]
                if pieces:  # (element j's tangent is column j: stacked last, then shaped out + in)
                    block = stack(pieces, -1).reshape(tuple(o.shape) + tuple(w.shape))
                else:
                    block = Tensor._make(np.zeros(tuple(o.shape) + tuple(w.shape), o.dtype))
                blocks.append(block)
            per_input = _unflatten(wrt_spec, blocks)
            per_output.append(per_input[0] if isinstance(argnums, int) else tuple(per_input))
        result = _unflatten(out_spec, per_output)
        return (result, aux) if has_aux else result

    return wrapper


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """A function that returns ``func``'s Hessian with respect to ``args[argnums]``.

    It is ``jacfwd(jacrev(func))``: forward mode over reverse mode, as torch computes it."""
    return jacfwd(jacrev(func, argnums), argnums)


# -- vmap ---------------------------------------------------------------------------------------------------------


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable[..., Any]:
    """A function that runs ``func`` on each sample of a batch and stacks the results, as torch's ``vmap``.

    ``in_dims`` picks the batch dim of each input (None: an input shared by all samples); ``out_dims`` the dim
    the results are stacked along.

    How it batches: a loop. Each sample is a view of the inputs (``select`` along its batch dim), ``func`` runs on
    it as written, and the outputs are stacked. That costs one call of ``func`` per sample (torch batches each op
    instead, so its cost grows less than linearly): a batch of 64 per-sample gradients is 64 backward passes here.
    Measured by ``benchmarks/bench_vmap.py`` (per-sample gradients of a MultiheadAttention layer, E = 32, n = 8,
    one thread): ``vmap(grad(f))`` takes 1.02 to 1.09 times a hand-written loop of ``grad(f)``; 10 times one
    batched backward (which gives only the summed gradient) at 8 samples, 45 times at 64, 81 times at 256; and
    2.4 times torch's ``vmap`` at 8 samples, 15 times at 64, 25 times at 256.
    The values, gradients through it and nesting (``vmap(grad(f))``, ``vmap(vmap(f))``) are torch's. Random ops
    inside: ``randomness="different"`` (and the default ``"error"``, which tinyattn does not enforce) draw anew for
    each sample; ``"same"`` draws the same for every sample. ``chunk_size`` is accepted and has no effect.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if isinstance(in_dims, (tuple, list)) and len(in_dims) != len(args):
            raise ValueError(f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): in_dims is not compatible with the "
                             f"structure of `inputs`. in_dims has structure of length {len(in_dims)} but inputs "
                             f"has {len(args)} positional inputs")
        mapped: list[tuple[list[Any], Any, list[int | None]]] = []
        sizes = set()
        for arg, dim in zip(args, dims):
            leaves, spec = _flatten(arg)
            dim_leaves = _flatten(dim)[0] if isinstance(dim, (tuple, list, dict)) else [dim] * len(leaves)
            leaf_dims: list[int | None] = []
            for leaf, d in zip(leaves, dim_leaves):
                if d is None or not isinstance(leaf, Tensor):
                    if d is not None:
                        raise ValueError(f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): Got in_dim={d} for an input "
                                         f"but the input is of type {type(leaf)}. We cannot vmap over non-Tensor "
                                         "arguments, please use None as the respective in_dim")
                    leaf_dims.append(None)
                    continue
                if not -leaf.ndim <= d < leaf.ndim:
                    raise ValueError(f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): Got in_dim={d} for some input, "
                                     f"but that input is a Tensor of dimensionality {leaf.ndim} so expected in_dim "
                                     f"to satisfy -{leaf.ndim} <= in_dim < {leaf.ndim}.")
                leaf_dims.append(d % leaf.ndim)
                sizes.add(leaf.shape[d])
            mapped.append((leaves, spec, leaf_dims))
        if not sizes:
            raise ValueError(f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): at least one input must be a Tensor "
                             "mapped over a dim (in_dims not None)")
        if len(sizes) > 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sorted(sizes)} for the mapped dimension")
        (size,) = sizes
        state = creation.default_generator().bit_generator.state if randomness == "same" else None
        results = []
        for b in range(size):
            if state is not None:
                creation.default_generator().bit_generator.state = state
            sample = [_unflatten(spec, [leaf if d is None else leaf.select(d, b) for leaf, d in zip(leaves, ds)])
                      for leaves, spec, ds in mapped]
            results.append(func(*sample, **kwargs))
        return _stacked_results(results, out_dims)

    return wrapper


def _stacked_results(results: list[Any], out_dims: Any) -> Any:
    """The samples' outputs, stacked leaf by leaf along ``out_dims`` (None: the output is the same for every sample,
    and returned once)."""
    flat = [_flatten(r) for r in results]
    spec = flat[0][1]
    leaf_dims = _flatten(out_dims)[0] if isinstance(out_dims, (tuple, list, dict)) else [out_dims] * len(flat[0][0])
    if len(leaf_dims) != len(flat[0][0]):
        raise ValueError(f"vmap(f, ..., out_dims={out_dims!r}): out_dims is not compatible with the structure of "
                         f"`outputs`: {len(leaf_dims)} out_dims for {len(flat[0][0])} outputs")
    stacked = []
    for k, d in enumerate(leaf_dims):
        pieces = [leaves[k] for leaves, _ in flat]
        if not all(isinstance(p, Tensor) for p in pieces):
            bad = next(p for p in pieces if not isinstance(p, Tensor))
            raise ValueError(f"vmap: `f` must only return Tensors, got type {type(bad)}. Did you mean to set "
                             "out_dims= to None for output?")
        if d is None:
            stacked.append(pieces[0])
            continue
        stacked.append(stack(pieces, d))
    return _unflatten(spec, stacked)


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """Return ``func`` itself, unchanged.

    torch's ``functionalize`` rewrites in-place ops as out-of-place ones for its compilers, with the same results;
    tinyattn runs the program as written, so nothing needs rewriting."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations'\n     remove='mutations_and_views'")
    return func


# -- modules ------------------------------------------------------------------------------------------------------


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None, kwargs: Any = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Call ``module`` with other tensors in place of its parameters and buffers, for this one call.

    ``parameter_and_buffer_dicts`` maps dotted names (as in ``named_parameters()``) to tensors; the module's own
    are back after the call.

    With ``tie_weights``, a tensor given for a parameter that the module shares under another name replaces it
    there too. With ``strict``, every parameter and buffer must be given, and nothing else."""
    dicts = parameter_and_buffer_dicts if isinstance(parameter_and_buffer_dicts, (list, tuple)) else [
        parameter_and_buffer_dicts]
    given: dict[str, Any] = {}
    for d in dicts:
        for name, value in d.items():
            if name in given:
                raise ValueError(f"functional_call: {name} appeared in multiple dictionaries; behavior of "
                                 "functional call is ambiguous")
            given[name] = value
    own = dict(module.named_parameters(remove_duplicate=False))
    own.update(dict(module.named_buffers(remove_duplicate=False)))
    unknown = sorted(set(given) - set(own))
    if strict:
        missing = sorted(set(own) - set(given))
        if unknown or missing:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}: unexpected key(s): "
                               f"{', '.join(unknown)}; missing key(s): {', '.join(missing)}.")
    if unknown:
        raise AttributeError(f"functional_call: {type(module).__name__} has no parameter or buffer named "
                             f"{unknown[0]!r}")
    if tie_weights:  # a shared tensor, given under one of its names, replaces it under all of them
        for name, tensor in own.items():
            if name not in given:
                tied = [n for n in given if own[n] is tensor]
                if tied:
                    given[name] = given[tied[0]]
    swapped = [(name, _swap(module, name, value)) for name, value in given.items()]
    try:
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for name, old in reversed(swapped):
            _swap(module, name, old)


def _swap(module: Any, dotted: str, value: Any) -> Any:
    """Put ``value`` at ``dotted`` (a parameter's or buffer's name) in ``module``; return what was there."""
    *path, leaf = dotted.split(".")
    for part in path:
        module = getattr(module, part)
    table = module._parameters if leaf in module._parameters else module._buffers
    old = table[leaf]
    table[leaf] = value
    object.__setattr__(module, leaf, value)  # (past Module.__setattr__, which takes only a Parameter)
    return old


def stack_module_state(models: Sequence[Any]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """Stack the parameters and buffers of ``models`` (of one architecture) along a new first dim.

    As torch's: with ``vmap`` and ``functional_call``, an ensemble runs as one."""
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    params = {name: stack([dict(m.named_parameters())[name].detach() for m in models]).requires_grad_()
              for name, _ in models[0].named_parameters()}
    buffers = {name: stack([dict(m.named_buffers())[name] for m in models]) for name, _ in models[0].named_buffers()}
    return params, buffers
