"""The explainer in Python, for notebooks: ``walkthrough(...)``, ``show_heatmaps(weights)``.

    from tinyattn.explain import walkthrough, show_heatmaps
    w = walkthrough()            # the chapter's size; as a cell's last line it shows the step table
    w.graph()                    # the computation graph (a matplotlib Figure)
    w.heatmaps()                 # per head: P, and dP and dS from the backward
    w.html("walkthrough.html")   # the interactive page, one self-contained file
    print(w.text())              # what ``python -m tinyattn.explain`` prints

Every figure is a ``matplotlib.figure.Figure`` made without pyplot: nothing here chooses or
changes the backend, so ``plt.show()`` keeps working, and a figure shows once.
"""

from __future__ import annotations

import html as _html
from typing import Any, Callable, Sequence

import numpy as np

from .. import autograd
from ..autograd import Tensor
from .cost import step_cost
from .mha import MHA_GROUPS, build, masks, parser
from .mha import walkthrough as _walkthrough_text
from .trace import Trace, grad_name, trace


def show_heatmaps(weights: Any, xlabel: str = "keys", ylabel: str = "queries", titles: Sequence[str] | None = None,
                  cmap: str = "Reds", size: float = 2.2) -> Any:
    """A grid of heatmaps of any ``(..., L, S)`` tensor or array (attention weights, d2l-style).

    ``(L, S)`` is one map; ``(h, L, S)`` one row of ``h``; ``(B, h, L, S)`` ``B`` rows of ``h``;
    more leading dims are flattened into rows. Returns the ``Figure``.
    """
    from .graph import notebook_figure

    array: np.ndarray[Any, Any] = weights.detach().numpy() if isinstance(weights, Tensor) else np.asarray(weights)
    if array.ndim < 2:
        raise ValueError(f"show_heatmaps: weights must have at least 2 dims (..., L, S), got shape {array.shape}")
    if array.ndim < 4:
        grid = array.reshape((1,) * (4 - array.ndim) + array.shape)  # (rows, cols, L, S)
    else:
        grid = array.reshape((-1,) + array.shape[-3:])
    rows, cols = int(np.shape(grid)[0]), int(np.shape(grid)[1])
    if titles is not None and len(titles) != rows * cols:
        raise ValueError(f"show_heatmaps: {len(titles)} titles for {rows * cols} maps")
    fig = notebook_figure(figsize=(size * cols + 0.8, size * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    image: Any = None
    for r in range(rows):
        for c in range(cols):
            ax = axes[r][c]
            image = ax.imshow(grid[r, c], cmap=cmap)
            if titles is not None:
                ax.set_title(titles[r * cols + c], fontsize=9)
            if r == rows - 1:
                ax.set_xlabel(xlabel)
            if c == 0:
                ax.set_ylabel(ylabel)
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8)
    return fig


def steps_html(steps: Trace) -> str:
    """The step table as HTML: op, equation, each gradient's formula and shape, FLOPs, saved bytes, source."""
    esc = _html.escape
    rows = []
    for step in steps:
        cost = step_cost(step)
        flops = f"{cost[0]:,} / {cost[1]:,}" if cost is not None else "?"
        saved = sum(b for _, _, b in step.saved)
        grads = "<br>".join(f"{esc(g.formula)} <span class='shape'>{esc(str(g.shape))}</span>" for g in step.grads)
        sources = "<br>".join(f"<code>{esc(g.source)}</code> ({esc(grad_name(g.name, step.order).split(' (')[0])})"
                              for g in step.grads)
        rows.append(f"<tr><td>{step.index}</td><td>{esc(step.op)}</td><td>{esc(step.forward)}</td>"
                    f"<td>{grads}</td><td>{flops}</td><td>{saved:,} B</td><td>{sources}</td></tr>")
    head = ("<tr><th>step</th><th>op</th><th>forward</th><th>gradients sent back (shape)</th>"
            "<th>FLOPs fwd / bwd</th><th>saved</th><th>computed at</th></tr>")
    return ("<table class='tinyattn-steps' style='font-size: 12px; border-collapse: collapse'>"
            f"<thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>")


class _InlinePage:
    """The page, shown in a notebook cell as an iframe (its script runs there as in a browser)."""

    def __init__(self, text: str, height: int) -> None:
        self.text, self.height = text, height

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{_html.escape(self.text, quote=True)}" style="width: 100%; '
                f'height: {self.height}px; border: 1px solid #ccc"></iframe>')


class Walkthrough:
    """A traced backward pass with its views: ``text()``, ``graph()``, ``heatmaps()``, ``html()``.

    As a notebook cell's last value it shows the step table (``_repr_html_``).
    """

    def __init__(self, steps: Trace, text: Callable[[], str], title: str, weights: np.ndarray | None,
                 groups: dict[str, str]):
        self.steps, self._text, self.title, self.weights, self.groups = steps, text, title, weights, groups

    def text(self) -> str:
        """The walkthrough as text (what the command line prints)."""
        return self._text()

    def __repr__(self) -> str:
        return f"<Walkthrough: {self.title}; {len(self.steps)} backward steps>"

    def _repr_html_(self) -> str:
        return f"<p><b>{_html.escape(self.title)}</b></p>" + steps_html(self.steps)

    def graph(self, path: str | None = None, wrap: int = 3) -> Any:
        """The computation graph, stage by stage, in ``wrap`` bands to fit a notebook (a ``Figure``).

        Saved to ``path`` if given."""
        from .graph import draw_graph

        return draw_graph(self.steps, path, groups=self.groups, title=self.title, wrap=wrap)

    def heatmaps(self, batch: int = 0) -> Any:
        """Per head, for sample ``batch``: ``P`` and, from the composed backward, ``dP`` and ``dS``."""
        maps, titles = [], []
        if self.weights is None:
            raise ValueError("heatmaps: this walkthrough has no attention weights (trace a MultiheadAttention)")
        heads = self.weights.shape[1]
        rows = [("P", self.weights[batch])]
        for name, label in (("P", "dP"), ("S_m", "dS"), ("S", "dS")):
            try:
                grad = self.steps.gradient_of(name)
            except KeyError:
                continue
            if grad.ndim == 4 and label not in [r[0] for r in rows]:
                rows.append((label, grad[batch]))
        for label, values in rows:
            maps.append(values)
            titles += [f"{label}, head {h + 1}" for h in range(heads)]
        return show_heatmaps(np.stack(maps), titles=titles, cmap="RdBu_r" if len(rows) > 1 else "Reds")

    def page(self, height: int = 900) -> Any:
        """The interactive page, to show inline in a notebook (an ``<iframe>`` holding the whole page)."""
        return _InlinePage(self.html(), height)

    def html(self, path: str | None = None) -> str:
        """The interactive page (one self-contained file); written to ``path`` if given."""
        from .page import page

        text = page(self.steps, self.title, self.groups, self.weights)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text


def walkthrough(*, batch: int = 3, seq: int = 5, d_model: int = 16, heads: int = 2, kv_len: int | None = None,
                mask: str = "none", seed: int = 0, fused: bool = False, module: Any = None,
                inputs: Any = None) -> Walkthrough:
    """Trace a backward pass: MultiheadAttention with the command line's options, or ``module(*inputs)``.

    With ``module``, its output (the first, if it returns a tuple) gets a random upstream gradient
    ``R`` (seeded), as the command line does for attention.
    """
    if module is not None:
        inputs = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
        rng = np.random.default_rng(seed)
        with trace() as steps:
            out = module(*inputs)
            out = out[0] if isinstance(out, tuple) else out
            out.backward(autograd.tensor(rng.standard_normal(out.shape).astype(out.dtype)))
        title = f"{type(module).__name__} backward"
        return Walkthrough(steps, steps.text, title, None, {})
    argv = [f"--batch={batch}", f"--seq={seq}", f"--d-model={d_model}", f"--heads={heads}", f"--mask={mask}",
            f"--seed={seed}"] + ([f"--kv-len={kv_len}"] if kv_len else []) + (["--fused"] if fused else [])
    args = parser().parse_args(argv)
    if d_model % heads:
        raise ValueError(f"walkthrough: d_model ({d_model}) must be divisible by heads ({heads})")
    return from_build(args, build(args))


def from_build(args: Any, built: Any) -> Walkthrough:
    """The ``Walkthrough`` of a pass ``mha.build(args)`` already ran; the weights P come from one more
    forward of the same module and inputs, without grad."""
    mha, inputs, steps = built
    with autograd.no_grad():
        xs = list(inputs.values())
        query, kv = xs[0], xs[-1]
        _, weights = mha(query, kv, kv, average_attn_weights=False, **masks(args))
    kind = "fused" if args.fused else "composed"
    masking = {"none": "no mask", "causal": "causal mask", "padding": "padding mask"}[args.mask]
    attending = f"cross-attention to {args.kv_len} keys" if args.kv_len else "self-attention"
    title = (f"MultiheadAttention backward: B={args.batch}, n={args.seq}, d_model={args.d_model}, h={args.heads}; "
             f"{attending}; {masking}; {kind} path")
    return Walkthrough(steps, lambda: _walkthrough_text(args, built), title, weights.numpy(), MHA_GROUPS)
