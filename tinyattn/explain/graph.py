"""Pictures of a traced pass: a layered drawing with matplotlib (no graphviz needed) and DOT text.

Nodes are the leaves (inputs, parameters) and the ops' outputs, labelled with name,
op and shape. ``layout`` places them left to right, stage after stage (``groups``:
name -> stage label, e.g. the five stages of multi-head attention), in columns:

* every stage owns its own columns, so stage boxes never overlap;
* an edge that skips columns is routed through empty slots of the columns between
  (the classic "dummy node" trick), so no edge crosses a node;
* each column is ordered by the mean row of its inputs, to keep edges short;
* each edge carries the forward value's shape; its gradient flows back along the
  same edge with the same shape, which the legend says once.

``layout`` returns plain coordinates, so a test can check that nothing overlaps.
"""

from __future__ import annotations

import re
import textwrap
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .trace import Trace

NodeKey = tuple[str, Any]  # ("leaf", name) or ("step", index)

# Sizes in layout units; draw_graph maps one unit to INCH inches, so text sizes are known here.
INCH = 0.55
NODE_FONT, LABEL_FONT, TITLE_FONT = 7.0, 6.0, 7.5  # points
CHAR = 0.62 / 72 / INCH  # width of one character per point of font size, in units
LINE = 1.25 / 72 / INCH  # height of one line per point of font size, in units
PAD, COLUMN_GAP, STAGE_GAP, ROW_GAP, MARGIN = 0.18, 1.5, 0.6, 0.55, 0.3


@dataclass
class Box:
    """An axis-aligned rectangle: centre ``(x, y)``, width ``w``, height ``h``."""

    x: float
    y: float
    w: float
    h: float

    def overlaps(self, other: Box, gap: float = 0.0) -> bool:
        """True if the two rectangles (each grown by ``gap / 2``) intersect."""
        return abs(self.x - other.x) * 2 < self.w + other.w + gap and abs(self.y - other.y) * 2 < self.h + other.h + gap

    def contains(self, other: Box) -> bool:
        """True if ``other`` lies inside this rectangle."""
        return (abs(other.x - self.x) * 2 + other.w <= self.w + 1e-9) and (
            abs(other.y - self.y) * 2 + other.h <= self.h + 1e-9
        )


@dataclass
class Layout:
    """Where everything goes: nodes, stage boxes with their titles, edges as polylines with a label."""

    nodes: dict[NodeKey, Box] = field(default_factory=dict)
    labels: dict[NodeKey, str] = field(default_factory=dict)
    leaves: set[NodeKey] = field(default_factory=set)
    stages: dict[str, Box] = field(default_factory=dict)
    titles: dict[str, tuple[Box, str]] = field(default_factory=dict)
    edges: list[tuple[list[tuple[float, float]], str, Box]] = field(default_factory=list)

    def fingerprint(self) -> str:
        """A short hash of every label and coordinate: equal fingerprints, equal pictures."""
        import hashlib

        def at(*values: float) -> str:
            # to 3 decimals, -0.000 as 0.000: a coordinate computed a hair below zero on one Python
            # version and a hair above on another is the same picture
            return ",".join(f"{round(v, 3) + 0.0:.3f}" for v in values)

        parts = [f"{self.labels[k]}@{at(b.x, b.y)}" for k, b in self.nodes.items()]
        parts += [f"{s}@{at(b.x, b.y, b.w, b.h)}" for s, b in self.stages.items()]
        parts += [f"{t}@{at(lb.x, lb.y)}:{';'.join(at(*p) for p in pts)}" for pts, t, lb in self.edges]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]

    def extent(self) -> Box:
        """The rectangle around everything."""
        boxes = list(self.nodes.values()) + list(self.stages.values()) + [e[2] for e in self.edges]
        x0 = min(b.x - b.w / 2 for b in boxes)
        x1 = max(b.x + b.w / 2 for b in boxes)
        y0 = min(b.y - b.h / 2 for b in boxes)
        y1 = max(b.y + b.h / 2 for b in boxes)
        return Box((x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0)


def graph_of(trace: Trace) -> tuple[dict[NodeKey, dict[str, Any]], list[tuple[NodeKey, NodeKey, tuple[int, ...]]]]:
    """``(nodes, edges)``: node key -> {name, op, shape}; edges (source, target, shape of the value on it)."""
    nodes: dict[NodeKey, dict[str, Any]] = {}
    edges = []
    for step in trace:
        nodes[("step", step.index)] = {"name": step.output, "op": step.op, "shape": step.grad_output_shape}
        for g in step.grads:
            src: NodeKey = ("step", g.source_step) if g.source_step is not None else ("leaf", g.name)
            if src[0] == "leaf":
                nodes.setdefault(src, {"name": g.name, "op": "leaf", "shape": g.shape})
            edges.append((src, ("step", step.index), g.shape))
    return nodes, edges


def _stages(
    nodes: dict[NodeKey, dict[str, Any]], edges: list[tuple[NodeKey, NodeKey, Any]], groups: dict[str, str]
) -> dict[NodeKey, str]:
    """Each node's stage: its name's group, else (an unnamed op, or a leaf) the stage of the first node it feeds."""
    consumers: dict[NodeKey, list[NodeKey]] = defaultdict(list)
    for src, dst, _ in edges:
        consumers[src].append(dst)
    stage: dict[NodeKey, str] = {}

    def find(key: NodeKey, seen: frozenset = frozenset()) -> str:
        if key in stage:
            return stage[key]
        name = nodes[key]["name"]
        found = groups.get(name)
        if found is None:
            for c in consumers[key]:
                if c not in seen:
                    found = find(c, seen | {key})
                    break
        stage[key] = found if found is not None else ""
        return stage[key]

    for key in nodes:
        find(key)
    return stage


def _node_text(node: dict[str, Any]) -> str:
    name = node["name"].split(" (")[0]  # "t3 (3, 5, 2, 8)": the shape is on its own line anyway
    op = "" if node["op"] == "leaf" else node["op"] + "\n"
    return f"{name}\n{op}{tuple(node['shape'])}"


def _text_box(text: str, x: float, y: float, points: float, pad: float) -> Box:
    lines = text.split("\n")
    return Box(x, y, max(len(t) for t in lines) * CHAR * points + 2 * pad, len(lines) * LINE * points + 2 * pad)


def layout(trace: Trace, groups: dict[str, str] | None = None) -> Layout:
    """Place nodes in stage-major columns, route long edges through free slots, and label every edge."""
    nodes, edges = graph_of(trace)
    groups = groups or {}
    stage_of = _stages(nodes, edges, groups)
    stage_order = {s: i for i, s in enumerate(dict.fromkeys(groups.values()))}
    stage_order.setdefault("", len(stage_order))
    inputs_of: dict[NodeKey, list[NodeKey]] = defaultdict(list)
    for src, dst, _ in edges:
        inputs_of[dst].append(src)

    # 1. columns: stage first, then the longest path from the stage's entry
    local: dict[NodeKey, int] = {}

    def depth(key: NodeKey) -> int:
        if key not in local:
            same = [depth(s) + 1 for s in inputs_of[key] if stage_of[s] == stage_of[key]]
            local[key] = max(same, default=0)
        return local[key]

    for step in reversed(trace):  # forward order
        depth(("step", step.index))
    for key in nodes:
        if key[0] == "leaf":  # a leaf sits in the column just before its first consumer in its stage
            uses = [local[d] for s, d, _ in edges if s == key and stage_of[d] == stage_of[key]]
            local[key] = max(min(uses, default=1) - 1, 0)
    width_of_stage: dict[str, int] = defaultdict(int)
    for key in nodes:
        width_of_stage[stage_of[key]] = max(width_of_stage[stage_of[key]], local[key] + 1)
    first_column, column = {}, 0
    for s in sorted(width_of_stage, key=lambda s: stage_order.get(s, len(stage_order))):
        first_column[s], column = column, column + width_of_stage[s]
    col = {key: first_column[stage_of[key]] + local[key] for key in nodes}

    # 2. long edges get one dummy slot per column they pass
    slots: dict[int, list[Any]] = defaultdict(list)  # column -> nodes and dummies
    for key in nodes:
        slots[col[key]].append(key)
    chains: list[list[Any]] = []  # per edge: the slots it passes, source to target
    for i, (src, dst, _) in enumerate(edges):
        if col[dst] <= col[src]:
            raise ValueError(f"graph: edge {src} -> {dst} does not go forward")
        chain: list[Any] = [src] + [("dummy", i, c) for c in range(col[src] + 1, col[dst])] + [dst]
        for d in chain[1:-1]:
            slots[d[2]].append(d)
        chains.append(chain)
    preds: dict[Any, list[Any]] = defaultdict(list)
    for chain in chains:
        for a, b in zip(chain, chain[1:]):
            preds[b].append(a)

    # 3. rows: each column ordered by the mean row of what feeds it (barycenter); a node fed by
    #    nothing (a leaf) follows what it feeds instead, so a second pass places it beside its consumer
    succs: dict[Any, list[Any]] = defaultdict(list)
    for b, feeding in preds.items():
        for a in feeding:
            succs[a].append(b)
    def wanted_row(item: Any, row: dict[Any, float], previous: dict[Any, float]) -> tuple[float, str]:
        near = [row[p] for p in preds[item] if p in row] or [previous[q] for q in succs[item] if q in previous]
        return (sum(near) / len(near) if near else 0.0, str(item))

    row: dict[Any, float] = {}
    for _ in range(2):
        previous, row = row, {}
        for c in sorted(slots):
            ordered = sorted(slots[c], key=lambda item: wanted_row(item, row, previous))  # noqa: B023 (used at once)
            wanted = [wanted_row(item, row, previous)[0] for item in ordered]
            placed: list[float] = []
            for w in wanted:  # as close to the wanted row as the previous one allows
                placed.append(max(w, placed[-1] + 1) if placed else w)
            shift = (sum(placed) - sum(wanted)) / len(placed)  # re-centre around the wanted rows
            for item, y in zip(ordered, placed):
                row[item] = y - shift

    # 4. coordinates: column widths from the widest box, rows from the tallest
    out = Layout()
    texts = {key: _node_text(n) for key, n in nodes.items()}
    sizes = {key: _text_box(texts[key], 0, 0, NODE_FONT, PAD) for key in nodes}
    row_h = max(b.h for b in sizes.values()) + ROW_GAP
    col_w: defaultdict[int, float] = defaultdict(float)
    for key in nodes:
        col_w[col[key]] = max(col_w[col[key]], sizes[key].w)
    xs, x = {}, 0.0
    stage_at = {first_column[s]: s for s in first_column}
    for c in range(max(slots) + 1):
        if c in stage_at and c > 0:
            x += STAGE_GAP + 2 * MARGIN
        w = col_w[c] or 0.3
        xs[c] = x + w / 2
        x += w + COLUMN_GAP
    for key in nodes:
        size = sizes[key]
        out.nodes[key] = Box(xs[col[key]], -row[key] * row_h, size.w, size.h)
        out.labels[key] = texts[key]
        if key[0] == "leaf":
            out.leaves.add(key)

    # 5. stage boxes: around their nodes, titled inside, wrapped to their width
    for s in first_column:
        if not s:
            continue
        members = [out.nodes[k] for k in nodes if stage_of[k] == s]
        x0 = min(b.x - b.w / 2 for b in members) - MARGIN
        x1 = max(b.x + b.w / 2 for b in members) + MARGIN
        chars = max(int((x1 - x0 - 2 * PAD) / (CHAR * TITLE_FONT)), 12)
        title = "\n".join(textwrap.wrap(s, chars))
        title_h = len(title.split("\n")) * LINE * TITLE_FONT + PAD
        y0 = min(b.y - b.h / 2 for b in members) - MARGIN
        y1 = max(b.y + b.h / 2 for b in members) + MARGIN + title_h
        out.stages[s] = Box((x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0)
        title_box = _text_box(title, 0, 0, TITLE_FONT, 0)
        out.titles[s] = (Box(x0 + PAD + title_box.w / 2, y1 - PAD / 2 - title_box.h / 2, title_box.w, title_box.h),
                         title)

    # 6. edges: polylines through their slots; the label on the first segment, moved along it if it collides
    for chain, (_, _, shape) in zip(chains, edges):
        points: list[tuple[float, float]] = []
        for item in chain:
            x_c = xs[col[item]] if item[0] != "dummy" else xs[item[2]]
            y_c = -row[item] * row_h
            points.append((x_c, y_c))
        (xa, ya), (xb, yb) = points[0], points[1]
        start = (xa + out.nodes[chain[0]].w / 2, ya)
        end_box = out.nodes.get(chain[1])
        end = (xb - (end_box.w if end_box is not None else col_w[chain[1][2]]) / 2, yb)  # the next column's edge
        points = [start] + points[1:-1] + [(points[-1][0] - out.nodes[chain[-1]].w / 2, points[-1][1])]
        text = str(tuple(shape))
        label = _text_box(text, 0, 0, LABEL_FONT, 0.02)
        candidates = [
            Box(start[0] + t * (end[0] - start[0]), start[1] + t * (end[1] - start[1]) + side * label.h * 0.6,
                label.w, label.h)
            for t in (0.5, 0.35, 0.65, 0.2, 0.8, 0.45, 0.55, 0.28, 0.72, 0.12, 0.88)
            for side in (1, -1, 2.2, -2.2, 3.4, -3.4)
        ]

        def clashes(cand: Box) -> int:
            return sum(cand.overlaps(e[2], gap=0.04) for e in out.edges) + sum(
                cand.overlaps(b, gap=0.04) for b in out.nodes.values()
            )

        spot = next((c for c in candidates if not clashes(c)), None) or min(candidates, key=clashes)
        out.edges.append((points, text, spot))
    return out


def to_dot(trace: Trace, groups: dict[str, str] | None = None) -> str:
    """The graph in Graphviz DOT: edges carry the forward value's shape; gradients flow back along them."""
    nodes, edges = graph_of(trace)
    stage_of = _stages(nodes, edges, groups or {})
    ids = {key: f"n{i}" for i, key in enumerate(nodes)}
    lines = [
        "digraph backward {",
        "  rankdir=LR;",
        '  label="arrows: the forward value and its shape; each gradient flows back along its arrow, same shape";',
        '  node [shape=box, fontname="Helvetica"];',
    ]
    by_stage: dict[str, list[NodeKey]] = defaultdict(list)
    for key in nodes:
        by_stage[stage_of[key]].append(key)
    for gi, (stage, keys) in enumerate(by_stage.items()):
        indent = "    " if stage else "  "
        if stage:
            lines.append(f'  subgraph cluster_{gi} {{ label="{stage}"; style=filled; color="#eef3fb";')
        for key in keys:
            label = _node_text(nodes[key]).replace("\n", "\\n")
            lines.append(f'{indent}{ids[key]} [label="{label}"];')
        if stage:
            lines.append("  }")
    for src, dst, shape in edges:
        lines.append(f'  {ids[src]} -> {ids[dst]} [label="{tuple(shape)}", fontsize=9];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def notebook_figure(**kwargs: Any) -> Any:
    """A matplotlib ``Figure`` made without pyplot that a notebook shows as a PNG (its ``_repr_png_``).

    No backend is chosen or changed; where IPython's inline backend is already on, its own
    formatter shows the figure instead; either way it shows once.
    """
    import io

    from matplotlib.figure import Figure

    class NotebookFigure(Figure):
        def _repr_png_(self) -> bytes:
            buffer = io.BytesIO()
            self.savefig(buffer, format="png", dpi=100)
            return buffer.getvalue()

    return NotebookFigure(**kwargs)


def dom_id(key: NodeKey) -> str:
    """The id a node's drawing carries in an SVG (``node-step-4``, ``node-leaf-W_Q``), for the HTML page."""
    kind, value = key
    return f"node-{kind}-{value}" if kind == "step" else "node-leaf-" + re.sub(r"[^A-Za-z0-9_-]", "_", str(value))


def draw_graph(trace: Trace, path: str | None = None, groups: dict[str, str] | None = None, title: str = "",
               wrap: int = 1) -> Any:
    """Draw the layout as a matplotlib ``Figure``; also save it to ``path`` (.png/.svg/.pdf) if given.

    ``wrap > 1`` cuts the wide picture into that many bands stacked top to bottom, as a line of
    text wraps, so that it stays readable at a notebook's width (the title is then left out).
    The figure is made without pyplot, so no backend is chosen or changed (``plt.show()`` in a
    notebook keeps working) and it shows once when it is a cell's last value.
    A PNG carries the layout's fingerprint in its metadata ("Description"), so a saved
    picture can be checked against the current layout without comparing pixels.
    """
    lay = layout(trace, groups)
    ext = lay.extent()
    x0, x1 = ext.x - ext.w / 2 - 0.5, ext.x + ext.w / 2 + 0.5
    band = (x1 - x0) / wrap
    height = ext.h + 1.6
    fig = notebook_figure(figsize=(band * INCH, height * wrap * INCH))
    for i in range(wrap):  # band i shows x in [x0 + i band, x0 + (i + 1) band]
        ax = fig.add_axes((0, 1 - (i + 1) / wrap, 1, 1 / wrap))
        ax.set_xlim(x0 + i * band, x0 + (i + 1) * band)
        _draw(ax, trace, lay, title if wrap == 1 else "", legend=i == wrap - 1)
    if path is not None:
        png = path.lower().endswith(".png")
        fig.savefig(path, dpi=150, metadata={"Description": f"tinyattn layout {lay.fingerprint()}"} if png else None)
    return fig


def _draw(ax: Any, trace: Trace, lay: Layout, title: str, legend: bool) -> None:
    """Every box, arrow and label of ``lay`` on ``ax`` (whose x range the caller set)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    ext = lay.extent()
    ax.set_ylim(ext.y - ext.h / 2 - 1.1, ext.y + ext.h / 2 + 0.5)
    ax.axis("off")
    palette = ["#e8f0fb", "#fdf0e0", "#e9f6ea", "#f6e9f4", "#f4f4dc", "#e6f4f6"]
    for i, (stage, b) in enumerate(lay.stages.items()):
        ax.add_patch(FancyBboxPatch((b.x - b.w / 2, b.y - b.h / 2), b.w, b.h, boxstyle="round,pad=0,rounding_size=0.15",
                                    fc=palette[i % len(palette)], ec="#9aa7b8", lw=0.8, zorder=0))
        tb, text = lay.titles[stage]
        ax.text(tb.x - tb.w / 2, tb.y, text, fontsize=TITLE_FONT, color="#34495e", va="center", ha="left", zorder=1,
                clip_on=True)
    _, keyed_edges = graph_of(trace)  # the same order as lay.edges
    for i, ((points, text, label), (src, dst, _)) in enumerate(zip(lay.edges, keyed_edges)):
        xs, ys = zip(*points)
        gid = f"edge-{i}-{dom_id(src)}-to-{dom_id(dst)}"  # (the page highlights the edges a gradient flows along)
        if len(points) > 2:
            ax.plot(xs[:-1], ys[:-1], color="#7f8c8d", lw=0.8, zorder=2, gid=gid + "-path")
        ax.add_patch(FancyArrowPatch(points[-2], points[-1], arrowstyle="->", mutation_scale=8, color="#7f8c8d",
                                     lw=0.8, zorder=2, shrinkA=0, shrinkB=0, gid=gid))
        ax.text(label.x, label.y, text, fontsize=LABEL_FONT, color="#c0392b", ha="center", va="center", zorder=4,
                clip_on=True,
                bbox=dict(boxstyle="square,pad=0.05", fc="white", ec="none", alpha=0.85))
    for key, b in lay.nodes.items():
        leaf = key in lay.leaves
        ax.add_patch(FancyBboxPatch((b.x - b.w / 2, b.y - b.h / 2), b.w, b.h, boxstyle="round,pad=0,rounding_size=0.08",
                                    fc="#fffbe6" if leaf else "white", ec="#2c3e50", lw=0.8, zorder=3,
                                    gid=dom_id(key)))
        ax.text(b.x, b.y, lay.labels[key], ha="center", va="center", fontsize=NODE_FONT, zorder=5,
                gid=dom_id(key) + "-label", clip_on=True)
    handles = [
        Line2D([0], [0], color="#7f8c8d", lw=0.8, marker=">", markersize=4,
               label="forward: the value an op passes on, labelled with its shape (red)"),
        Line2D([0], [0], color="#7f8c8d", lw=0.8, ls="--", marker="<", markersize=4,
               label="backward: its gradient flows back along the same arrow, with the same shape"),
    ]
    if legend:
        ax.legend(handles=handles, loc="lower left", fontsize=7, frameon=False)
    if title:
        ax.text(ext.x, ext.y + ext.h / 2 + 0.25, title, ha="center", va="bottom", fontsize=9)
