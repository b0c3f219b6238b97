"""``trace``: run a backward pass and record every step of it, for reading.

Each ``Step`` is one op's backward: which op, its forward equation and the
backward equation for each input (with the tensors' names filled in), the
shape and norm of the gradient arriving at the op and of each gradient it
sends on, and where in the source that backward is written.

    with trace() as steps:   # the recorder is on inside the block
        loss = f(x)
        loss.backward()      # as usual; each op's backward becomes a Step
    print(steps)             # a readable walkthrough
    print(steps.table())     # one line per gradient
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..autograd.core.function import Function, LeafNode, Node
from ..autograd.core.grad_mode import set_recorder

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
    source: str = ""  # ``path:line`` of the line in the op's backward that computes this gradient


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
    input_shapes: list[tuple[int, ...] | None] = field(default_factory=list)  # None: not a tensor
    saved: list[tuple[int, tuple[int, ...], int]] = field(default_factory=list)  # (id, shape, bytes) kept for backward
    grad_positions: list[int] = field(default_factory=list)  # the inputs that received a gradient
    # in a second pass (a gradient of a gradient): the first pass's step whose backward formula this op is part
    # of, e.g. "the backward of Softmax (step 3): dS = P ⊙ (dP − rowsum(dP ⊙ P))"; "" in a first pass
    differentiates: str = ""
    # 1 in a first pass; 2 in the pass that differentiates a first pass's gradients, whose gradients are written
    # d₂Z (dL₂/dZ), so that they are not taken for the first pass's dZ, which are tensors of their own there
    order: int = 1

    def __str__(self) -> str:
        lines = [f"[{self.index:2d}] {self.op:<10} {self.forward}"]
        if self.differentiates:
            lines.append(f"     differentiates {self.differentiates}")
        arriving = grad_name(self.output, self.order)
        lines.append(f"     {arriving} arrives: {_fmt_shape(self.grad_output_shape)}  |{arriving}| = "
                     f"{self.grad_output_norm:.4g}")
        for g in self.grads:
            lines.append(f"     {g.formula:<48} -> {_fmt_shape(g.shape)}  |{grad_name(g.name, self.order)}| = "
                         f"{g.norm:.4g}")
        lines.append(f"     backward: {self.source_lines()}")
        return "\n".join(lines)

    def source_lines(self) -> str:
        """Where each gradient is computed: ``path:line (dX), :line (dW)``, after the op's ``backward`` name."""
        path = self.source.split(":")[0]
        parts = []
        for g in self.grads:
            where = g.source.split(":", 1)[1] if g.source.startswith(path + ":") else g.source
            parts.append(f"{where} ({grad_name(g.name, self.order).split(' (')[0]})")
        name = self.source.split(" ")[-1]  # "(Softmax.backward)"
        return f"{path}:" + ", :".join(parts) + f" {name}" if parts else self.source


class Trace(list):
    """The recorded steps, output first; printable as a walkthrough or as a table.

    Used as a context manager (see ``trace()``) it switches the recorder on for its block.
    """

    def __enter__(self) -> Trace:
        self._recorder = _Recorder(self)
        self._previous = set_recorder(self._recorder)
        return self

    def __exit__(self, exc_type: Any, *exc_info: Any) -> None:
        set_recorder(self._previous)
        self._recorder.finish()
        del self._recorder  # the forward's tensors are no longer needed
        if exc_type is None and not self:
            raise RuntimeError(
                "trace: no op's backward ran inside the block; call backward() on a tensor an op made "
                "there (a leaf has no backward pass to trace)"
            )

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

    def __repr__(self) -> str:
        return f"<Trace: {len(self)} backward steps; print() it for the walkthrough>"

    def text(self) -> str:
        """The walkthrough as text (``print(steps)``)."""
        return str(self)

    def _repr_html_(self) -> str:
        from .notebook import steps_html

        return steps_html(self)

    def graph(self, path: str | None = None) -> Any:
        """The computation graph (a matplotlib ``Figure``; saved to ``path`` if given)."""
        from .graph import draw_graph

        return draw_graph(self, path)

    def html(self, path: str | None = None, title: str = "backward pass") -> str:
        """The interactive page of these steps (saved to ``path`` if given)."""
        from .page import page

        text = page(self, title, {})
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text


def _fmt_shape(shape: tuple[int, ...]) -> str:
    return str(tuple(shape))


_source_cache: dict[type, str] = {}


def backward_source(fn: type[Function]) -> str:
    """``path:line`` of the code that states ``fn``'s derivative, relative to the project root: its ``backward``
    (found in the class's own source, or the base class's that it takes it from), or, for an elementwise op, its
    ``derivative``."""
    if fn not in _source_cache:
        method = "derivative" if "derivative" in vars(fn) else "backward"
        owner = next((klass for klass in fn.__mro__ if method in vars(klass)), fn)
        try:
            path = inspect.getsourcefile(owner) or "?"
            source, line = inspect.getsourcelines(owner)
            line += next(i for i, text in enumerate(source) if text.lstrip().startswith(f"def {method}("))
            rel = os.path.relpath(path, _PACKAGE_ROOT) if path.startswith(_PACKAGE_ROOT) else path
            _source_cache[fn] = f"{rel}:{line} ({fn.__name__}.{method})"
        except (OSError, TypeError, StopIteration):
            _source_cache[fn] = f"{fn.__name__}.{method}"
    return _source_cache[fn]


_backward_syntax: dict[type, tuple[int, dict[int, set[str]], list[Any]]] = {}


def _syntax(fn: type[Function]) -> tuple[int, dict[int, set[str]], list[Any]]:
    """``fn.backward``'s return line, the names each line assigns (``= None`` placeholders left out),
    and what its last ``return`` returns (a name per position, or None for another expression)."""
    if fn not in _backward_syntax:
        lines, start = inspect.getsourcelines(fn.backward)
        body = ast.parse(textwrap.dedent("".join(lines))).body[0]
        assigns: dict[int, set[str]] = {}
        for node in ast.walk(body):
            targets: list[Any] = []
            if isinstance(node, ast.Assign) and not (isinstance(node.value, ast.Constant) and node.value.value is None):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "at":
                targets = node.args[:1]  # np.add.at(dx, index, g): dx computed in place
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if names:
                assigns.setdefault(start + getattr(node, "lineno", 1) - 1, set()).update(names)
        last = max((n for n in ast.walk(body) if isinstance(n, ast.Return) and n.value is not None),
                   key=lambda n: n.lineno)
        values = last.value.elts if isinstance(last.value, ast.Tuple) else [last.value]
        returned = [v.id if isinstance(v, ast.Name) else None for v in values]
        _backward_syntax[fn] = (start + last.lineno - 1, assigns, returned)
    return _backward_syntax[fn]


def gradient_lines(node: Node, grad_output: np.ndarray) -> list[str]:
    """For each gradient ``node``'s backward returns, the lines that computed it, as ``"53"`` or ``"53–55"``.

    The backward is run once more under a line tracer (it only reads its saved tensors), so the
    lines are the ones that ran for these shapes, not every branch of the source.
    """
    try:
        return_line, assigns, returned = _syntax(node.fn)
    except (OSError, TypeError, SyntaxError, ValueError, IndexError):
        return []
    code, ran = node.fn.backward.__code__, []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code is not code:
            return None
        if event == "line":
            ran.append(frame.f_lineno)
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        node.fn.backward(node.ctx, np.array(grad_output, copy=True))  # type: ignore[arg-type]
    finally:
        sys.settrace(previous)
    found = []
    for name in returned:
        lines = sorted({line for line in ran if name is not None and name in assigns.get(line, ())})
        if not lines:
            found.append(str(return_line))
        else:
            found.append(str(lines[0]) if len(lines) == 1 else f"{lines[0]}–{lines[-1]}")
    return found


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


def render(template: str, out: str, inputs: list[str], position: int, ctx: Any, out_shape: tuple[int, ...],
           order: int = 1) -> str:
    """Fill a formula template with names: ``{out}``, ``{0}``, ``{1}``..., ``{i}``, ``{out_shape}``, a ``ctx`` field.

    ``d{1}`` is the gradient's name (``grad_name``; in a second pass, ``order=2``, ``d₂``) and ``{1}ᵀ`` the
    transpose's (``transposed``),
    so ``K_h`` gives ``dK_h`` and ``(K_h)ᵀ``, and ``(K_h)ᵀ`` gives ``d(K_h)ᵀ`` and ``K_h``.
    """
    names = {"out": out, "i": inputs[position] if position < len(inputs) else "?"}
    names.update({str(k): label for k, label in enumerate(inputs)})
    values = {"out_shape": str(tuple(out_shape))}

    def fill(match: re.Match) -> str:
        prefix, key, suffix = match.group(1), match.group(2), match.group(3)
        if key not in names:
            if key not in values:
                values[key] = _format_value(getattr(ctx, key, "…"))
            return prefix + values[key] + suffix
        label = transposed(names[key]) if suffix else names[key]
        return grad_name(label, order) if prefix else label

    return re.sub(r"(d?)\{(\w+)\}(ᵀ?)", fill, template)


def transposed(label: str) -> str:
    """The name of a matrix transpose: ``X`` -> ``Xᵀ``, ``W^Q`` -> ``W^Qᵀ``, ``K_h`` -> ``(K_h)ᵀ``, and back."""
    if label.startswith("(") and label.endswith(")ᵀ"):
        return label[1:-2]
    if re.fullmatch(r"[A-Za-z]ᵀ", label):
        return label[0]
    if re.fullmatch(r"[A-Za-z](\^\w+)?", label):
        return label + "ᵀ"
    return f"({label})ᵀ"


def grad_name(label: str, order: int = 1) -> str:
    """The name of ``dL/d label``: ``dQ``, ``dK_h``, ``d(K_h)ᵀ``, ``d(QKᵀ)``, ``dt3 (3, 5, 2, 8)``; in a second pass
    (``order=2``), of ``dL₂/d label``: ``d₂Q``, ``d₂(dQ)``."""
    d = "d" if order == 1 else "d₂"
    if "ᵀ" in label and not label.startswith("("):
        return f"{d}({label})"
    if order == 2 and label.startswith("d"):  # the gradient of a first pass's gradient: d₂(dP)
        return f"{d}({label})"
    return d + label


def _constant_label(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return str(value)
    return getattr(value, "name", None) or "const"


class _Recorder:
    """Listens while ``trace()`` is on: remembers each op's tensors in the forward, builds a Step per backward."""

    def __init__(self, steps: Trace) -> None:
        self.steps = steps
        self.outputs: dict[Node, Any] = {}  # node -> the tensor it made (kept alive for its name)
        self.args: dict[Node, tuple[Any, ...]] = {}  # node -> its inputs (tensors and constants)
        self.placeholders: dict[Node, str] = {}
        self.saved: dict[Node, list[tuple[int, tuple[int, ...], int]]] = {}
        self.step_of_node: dict[Node, int] = {}
        self.pending: list[tuple[InputGrad, Node]] = []  # gradients whose source step comes later
        # a backward recorded as ops (create_graph=True): the nodes whose backward is running, innermost last; each
        # op recorded meanwhile is part of that backward's formula, and the gradients it returns are named for it
        self.inside: list[Node] = []
        self.origin_of: dict[Node, Node] = {}
        self.grad_names: dict[Node, str] = {}
        self.recorded_a_pass = False  # has a backward run as recorded ops (so a plain pass now is a second one)

    def begin_backward_of(self, node: Node) -> None:
        self.inside.append(node)
        self.recorded_a_pass = True

    def end_backward_of(self, node: Node) -> None:
        self.inside.pop()

    def forward(self, node: Node, args: tuple[Any, ...], output: Any) -> None:
        self.outputs[node] = output
        self.args[node] = args
        if self.inside:
            self.origin_of[node] = self.inside[-1]
        saved = node.ctx.saved_tensors if node.ctx is not None else ()
        kept = [a for a in saved if isinstance(a, np.ndarray)]  # what backward will read
        # an array is known by where its data starts and its shape: two ops keeping X keep the same array
        self.saved[node] = [(hash((a.__array_interface__["data"][0], a.shape, a.strides)), a.shape, a.nbytes)
                            for a in kept]

    def name_of(self, node: Node) -> str:
        """The name the forward gave the node's tensor, else one derived from its op, else ``t1``, ``t2``..."""
        tensor = node.retained() if isinstance(node, LeafNode) and node.retained else self.outputs.get(node)
        if tensor is not None and tensor.name:
            return tensor.name
        if node in self.grad_names:  # a gradient a first pass computed as a tensor (create_graph=True)
            return self.grad_names[node]
        meta = node.input_meta[0] if node.input_meta else None
        if node.fn.__name__ == "Transpose" and node.ctx is not None and meta is not None and node.edges[0] is not None:
            ndim = len(meta[0])
            if sorted(node.ctx.dims) == [ndim - 2, ndim - 1]:  # a matrix transpose of a named tensor
                inner = self.name_of(node.edges[0])
                if not re.match(r"t\d+ ", inner):
                    return transposed(inner)
        if node not in self.placeholders:  # the n-th unnamed tensor, with its shape: "t3 (3, 5, 2, 8)"
            shape = tensor.shape if tensor is not None else None
            self.placeholders[node] = f"t{len(self.placeholders) + 1}" + (f" {tuple(shape)}" if shape else "")
        return self.placeholders[node]

    def differentiated(self, node: Node, earlier: int | None) -> str:
        """What a second pass's op differentiates: the first pass's backward formulas it is part of, or the forward
        op a first pass met already (at step ``earlier``), whose value those formulas read; "" if neither."""
        origin = self.origin_of.get(node)
        if origin is None and earlier is not None:
            return f"the forward's {node.name} again (step {earlier}): the first pass's formulas read its value"
        if origin is None:
            return ""
        at = self.step_of_node.get(origin)
        formulas = "; ".join(g.formula for g in self.steps[at - 1].grads) if at is not None else "?"
        where = f" (step {at})" if at is not None else ""
        return f"the backward of {origin.name}{where}: {formulas}"

    def backward(self, node: Node, grad_output: Any, grad_inputs: tuple[Any, ...]) -> None:
        recorded = hasattr(grad_output, "array")  # (a Tensor: this backward runs as recorded ops, create_graph=True)
        order = 2 if self.recorded_a_pass and not recorded else 1
        grad_output = np.asarray(getattr(grad_output, "array", grad_output))
        index = len(self.steps) + 1
        earlier = self.step_of_node.get(node)
        self.step_of_node[node] = index
        out = self.name_of(node)
        args = self.args.get(node, (None,) * len(node.edges))
        labels = [
            self.name_of(edge) if edge is not None else _constant_label(arg) for edge, arg in zip(node.edges, args)
        ]
        templates = node.fn.grad_formulas
        path = backward_source(node.fn).split(":")[0]
        lines = gradient_lines(node, grad_output)
        grads = []
        for position, (edge, ig) in enumerate(zip(node.edges, grad_inputs)):
            if edge is None or ig is None:
                continue
            template = templates[min(position, len(templates) - 1)] if templates else "d{i} = ?"
            g = InputGrad(
                position=position,
                name=labels[position],
                formula=render(template, out, labels, position, node.ctx, grad_output.shape, order),
                shape=tuple(np.shape(ig)),
                norm=float(np.linalg.norm(np.asarray(getattr(ig, "array", ig), dtype=np.float64))),
                array=np.array(getattr(ig, "array", ig), copy=True),
                source_step=None,
                source=f"{path}:{lines[position]}" if position < len(lines) else backward_source(node.fn),
            )
            grads.append(g)
            if not isinstance(edge, LeafNode):
                self.pending.append((g, edge))
            made_by = getattr(ig, "grad_fn", None)  # a gradient computed as recorded ops: named for a second pass
            if made_by is not None and made_by not in self.grad_names and not getattr(ig, "name", None):
                self.grad_names[made_by] = grad_name(labels[position])
        self.steps.append(
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
                input_shapes=[getattr(a, "shape", None) for a in args],
                saved=self.saved.get(node, []),
                grad_positions=[g.position for g in grads],
                differentiates=self.differentiated(node, earlier),
                order=order,
            )
        )

    def finish(self) -> None:
        for g, node in self.pending:
            g.source_step = self.step_of_node.get(node)


def trace() -> Trace:
    """Record a forward and backward pass for reading: ``with trace() as steps: ...``.

    Inside the block ops run as usual and ``backward()`` fills ``.grad`` as usual;
    meanwhile the forward's tensor names are noted and each op's backward
    becomes a ``Step`` of ``steps``. Tensors without a name are called after
    their op where that is clear (``Kᵀ`` for the transpose of ``K``), else
    ``t1``, ``t2``, ... in the order the backward pass meets them::

        with trace() as steps:
            loss = model(x).sum()
            loss.backward()
        print(steps)
    """
    return Trace()
