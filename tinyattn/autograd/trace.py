"""``trace``: run a backward pass and record every step of it, for reading.

Each ``Step`` is one op's backward: which op, its forward equation and the
backward equation for each input (with the tensors' names filled in), the
shape and norm of the gradient arriving at the op and of each gradient it
sends on, and where in the source that backward is written.

    steps = trace(loss)      # like loss.backward(), but recorded
    print(steps)             # a readable walkthrough
    print(steps.table())     # one line per gradient
"""

from __future__ import annotations

import inspect
import os
import string
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .engine import _root_gradient, run_backward
from .function import Function, Node
from .tensor import Tensor

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class InputGrad:
    """The gradient one step sends to one of its inputs."""

    position: int
    name: str
    formula: str
    shape: tuple[int, ...]
    norm: float
    array: np.ndarray = field(repr=False)
    source_step: int | None  # the step that produced this input; None for a leaf


@dataclass
class Step:
    """One op's backward, as it ran."""

    index: int
    op: str
    output: str
    inputs: list[str]
    forward: str
    grad_output_shape: tuple[int, ...]
    grad_output_norm: float
    grads: list[InputGrad]
    source: str

    def __str__(self) -> str:
        lines = [
            f"[{self.index:2d}] {self.op:<10} {self.forward}",
            f"     d{self.output} arrives: {_fmt_shape(self.grad_output_shape)}  |d{self.output}| = "
            f"{self.grad_output_norm:.4g}",
        ]
        for g in self.grads:
            lines.append(f"     {g.formula:<48} -> {_fmt_shape(g.shape)}  |d{g.name}| = {g.norm:.4g}")
        lines.append(f"     backward: {self.source}")
        return "\n".join(lines)


class Trace(list):
    """The recorded steps, output first; printable as a walkthrough or as a table."""

    def gradient_of(self, name: str) -> np.ndarray:
        """The total gradient that reached the tensor called ``name`` (summed over its uses)."""
        parts = [g.array for step in self for g in step.grads if g.name == name]
        if not parts:
            raise KeyError(f"trace: no gradient reached a tensor named {name!r}")
        return sum(parts[1:], parts[0])

    def table(self, norms: bool = True) -> str:
        """One line per gradient: step, op, formula, shape (and norm)."""
        width = max([len("backward formula")] + [len(g.formula) for step in self for g in step.grads])
        header = f"{'step':>4}  {'op':<10}  {'backward formula':<{width}}  {'shape':<16}"
        header += f"  {'norm':>9}" if norms else ""
        rows = [header.rstrip(), "-" * len(header.rstrip())]
        for step in self:
            for g in step.grads:
                line = f"{step.index:>4}  {step.op:<10}  {g.formula:<{width}}  {_fmt_shape(g.shape):<16}"
                rows.append((line + f"  {g.norm:>9.4g}") if norms else line.rstrip())
        return "\n".join(rows)

    def sources(self) -> list[str]:
        """Where each op's backward is written, once per op, in the order met."""
        return list(dict.fromkeys(step.source for step in self))

    def __str__(self) -> str:
        return "\n\n".join(str(s) for s in self)


def _fmt_shape(shape: tuple[int, ...]) -> str:
    return str(tuple(shape))


_source_cache: dict[type, str] = {}


def backward_source(fn: type[Function]) -> str:
    """``path:line`` of ``fn.backward``, relative to the project root."""
    if fn not in _source_cache:
        try:
            path = inspect.getsourcefile(fn.backward) or "?"
            source, line = inspect.getsourcelines(fn.backward)
            line += next(i for i, text in enumerate(source) if text.lstrip().startswith("def "))  # skip decorators
            rel = os.path.relpath(path, _PACKAGE_ROOT) if path.startswith(_PACKAGE_ROOT) else path
            _source_cache[fn] = f"{rel}:{line} ({fn.__name__}.backward)"
        except (OSError, TypeError):
            _source_cache[fn] = f"{fn.__name__}.backward"
    return _source_cache[fn]


def _format_value(value: Any) -> str:
    """A compact label for an op's setting: slices as ``0:16``, tuples as ``(1, 2)``."""
    if isinstance(value, slice):
        start = "" if value.start is None else value.start
        stop = "" if value.stop is None else value.stop
        return f"{start}:{stop}" + ("" if value.step in (None, 1) else f":{value.step}")
    if isinstance(value, tuple) and any(isinstance(v, slice) or v is Ellipsis for v in value):
        return ", ".join("..." if v is Ellipsis else _format_value(v) for v in value)
    if isinstance(value, np.ndarray):
        return f"<{value.dtype} array {value.shape}>"
    return str(tuple(int(v) for v in value)) if isinstance(value, tuple) else str(value)


def render(template: str, out: str, inputs: list[str], position: int, ctx: Any, out_shape: tuple[int, ...]) -> str:
    """Fill a formula template: ``{out}``, ``{0}``, ``{1}``..., ``{i}``, ``{out_shape}``, or a ``ctx`` attribute."""
    values: dict[str, str] = {"out": out, "i": inputs[position] if position < len(inputs) else "?"}
    values["out_shape"] = str(tuple(out_shape))
    for _, field_name, _, _ in string.Formatter().parse(template):
        if field_name and not field_name.isdigit() and field_name not in values:
            values[field_name] = _format_value(getattr(ctx, field_name, "…"))
    text = template.format(*inputs, **values)
    return text.replace("ᵀᵀ", "")  # (Kᵀ)ᵀ = K


def _constant_label(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def trace(output: Tensor, gradient: Any = None, *, retain_graph: bool = False) -> Trace:
    """Backpropagate from ``output`` (accumulating ``.grad`` like ``backward()``) and record each step.

    Unnamed tensors get placeholder names ``t1``, ``t2``, ... in the order the
    backward pass meets them.
    """
    names: dict[int, str] = {}
    counter = [0]

    def name_of(edge: Node | Tensor) -> str:
        given = edge.out_name if isinstance(edge, Node) else edge.name
        if given:
            return given
        if id(edge) not in names:
            counter[0] += 1
            names[id(edge)] = f"t{counter[0]}"
        return names[id(edge)]

    steps: list[Step] = []
    step_of_node: dict[int, int] = {}
    pending: list[tuple[InputGrad, Node]] = []  # gradients whose source step is not recorded yet
    root_name = name_of(output._grad_fn) if output._grad_fn is not None else name_of(output)

    def hook(node: Node, grad_output: np.ndarray, input_grads: Any) -> None:
        index = len(steps) + 1
        step_of_node[id(node)] = index
        out = name_of(node)
        labels = [
            name_of(edge) if edge is not None else _constant_label(const)
            for edge, const in zip(node.edges, node.constants)
        ]
        templates = node.fn.grad_formulas
        grads = []
        for position, (edge, ig) in enumerate(zip(node.edges, input_grads)):
            if edge is None or ig is None:
                continue
            template = templates[min(position, len(templates) - 1)] if templates else "d{i} = ?"
            g = InputGrad(
                position=position,
                name=labels[position],
                formula=render(template, out, labels, position, node.ctx, grad_output.shape),
                shape=tuple(np.shape(ig)),
                norm=float(np.linalg.norm(np.asarray(ig, dtype=np.float64))),
                array=np.array(ig, copy=True),
                source_step=None,
            )
            grads.append(g)
            if isinstance(edge, Node):
                pending.append((g, edge))
        steps.append(
            Step(
                index=index,
                op=node.name,
                output=out,
                inputs=labels,
                forward=render(node.fn.formula, out, labels, 0, node.ctx, grad_output.shape),
                grad_output_shape=tuple(grad_output.shape),
                grad_output_norm=float(np.linalg.norm(grad_output.astype(np.float64))),
                grads=grads,
                source=backward_source(node.fn),
            )
        )

    if output._grad_fn is None:
        raise RuntimeError(f"trace: {root_name} is a leaf; there is no backward pass to trace")
    run_backward(output, _root_gradient(output, gradient), retain_graph=retain_graph, hook=hook)
    for g, node in pending:
        g.source_step = step_of_node.get(id(node))
    return Trace(steps)
