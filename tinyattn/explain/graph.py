"""Pictures of a traced backward pass: a matplotlib drawing (no graphviz needed) and DOT text.

Nodes are the leaves (inputs, parameters) and the ops' outputs, labelled with
name, op and shape, laid out left to right in forward order; each edge carries
the shape of the gradient flowing back along it. Optional ``groups`` (name ->
label) shade related nodes, e.g. the stages of multi-head attention; a node
without a name joins the group of the first named node it feeds.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .trace import Trace

NodeKey = tuple[str, Any]  # ("leaf", name) or ("step", index)


def graph_of(trace: Trace) -> tuple[dict[NodeKey, dict[str, Any]], list[tuple[NodeKey, NodeKey, tuple[int, ...]]]]:
    """``(nodes, edges)``: node key -> {name, op, shape, depth, inputs}; edges (source, target, gradient shape)."""
    nodes: dict[NodeKey, dict[str, Any]] = {}
    edges = []
    for step in trace:
        nodes[("step", step.index)] = {"name": step.output, "op": step.op, "shape": step.grad_output_shape}
        for g in step.grads:
            src: NodeKey = ("step", g.source_step) if g.source_step is not None else ("leaf", g.name)
            if src[0] == "leaf":
                nodes.setdefault(src, {"name": g.name, "op": "leaf", "shape": g.shape})
            edges.append((src, ("step", step.index), g.shape))
    inputs_of: dict[NodeKey, list[NodeKey]] = defaultdict(list)
    for src, dst, _ in edges:
        inputs_of[dst].append(src)
    depth: dict[NodeKey, int] = {}
    for step in reversed(trace):  # forward order: inputs before outputs
        key = ("step", step.index)
        depth[key] = 1 + max((depth.get(s, 0) for s in inputs_of[key]), default=0)
    consumer_depths: dict[NodeKey, list[int]] = defaultdict(list)
    for src, dst, _ in edges:
        consumer_depths[src].append(depth[dst])
    for key, node in nodes.items():
        # a leaf sits just before its first use (W^O next to the output projection, not beside X)
        node["depth"] = depth[key] if key in depth else min(consumer_depths[key]) - 1
        node["inputs"] = inputs_of[key]
    return nodes, edges


def resolve_groups(
    nodes: dict[NodeKey, dict[str, Any]], edges: list[tuple[NodeKey, NodeKey, Any]], groups: dict[str, str]
) -> dict[NodeKey, str]:
    """Group of every node: its own name's, else that of the first named node it feeds (downstream)."""
    consumers: dict[NodeKey, list[NodeKey]] = defaultdict(list)
    for src, dst, _ in edges:
        consumers[src].append(dst)
    resolved: dict[NodeKey, str] = {}
    for key in sorted(nodes, key=lambda k: -nodes[k]["depth"]):  # outputs first
        name = nodes[key]["name"]
        if name in groups:
            resolved[key] = groups[name]
        elif nodes[key]["op"] != "leaf":
            for c in consumers[key]:
                if c in resolved:
                    resolved[key] = resolved[c]
                    break
    return resolved


def to_dot(trace: Trace, groups: dict[str, str] | None = None) -> str:
    """The graph in Graphviz DOT; gradients flow along the edges, against their direction."""
    nodes, edges = graph_of(trace)
    ids = {key: f"n{i}" for i, key in enumerate(nodes)}
    lines = ["digraph backward {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];']
    by_group: dict[str, list[NodeKey]] = defaultdict(list)
    resolved = resolve_groups(nodes, edges, groups or {})
    for key in nodes:
        by_group[resolved.get(key, "")].append(key)
    for gi, (group, keys) in enumerate(by_group.items()):
        indent = "    " if group else "  "
        if group:
            lines.append(f'  subgraph cluster_{gi} {{ label="{group}"; style=filled; color="#eef3fb";')
        for key in keys:
            n = nodes[key]
            op = "" if n["op"] == "leaf" else f"\\n{n['op']}"
            lines.append(f'{indent}{ids[key]} [label="{n["name"]}{op}\\n{tuple(n["shape"])}"];')
        if group:
            lines.append("  }")
    for src, dst, shape in edges:
        lines.append(f'  {ids[src]} -> {ids[dst]} [label="grad {tuple(shape)}", fontsize=9];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw_graph(trace: Trace, path: str | None = None, groups: dict[str, str] | None = None, title: str = "") -> Any:
    """Draw the traced graph with matplotlib (headless-safe); save to ``path`` (.png/.svg) if given."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    nodes, edges = graph_of(trace)
    columns: dict[int, list[NodeKey]] = defaultdict(list)
    for key, n in nodes.items():
        columns[n["depth"]].append(key)
    # order each column by the mean row of its inputs, to keep edges short
    resolved = resolve_groups(nodes, edges, groups or {})
    group_order = {g: i for i, g in enumerate(dict.fromkeys(resolved.values()))}
    row: dict[NodeKey, float] = {}
    for d in sorted(columns):
        col = columns[d]
        # keep each group's nodes together, then follow the mean row of the inputs (short edges)
        col.sort(
            key=lambda k: (
                group_order.get(resolved.get(k, ""), -1),
                sum(row.get(s, 0.0) for s in nodes[k]["inputs"]) / max(len(nodes[k]["inputs"]), 1),
            )
        )
        for i, key in enumerate(col):
            row[key] = i - (len(col) - 1) / 2
    pos = {key: (nodes[key]["depth"] * 2.2, -row[key] * 1.3) for key in nodes}

    height = max(len(c) for c in columns.values())
    fig, ax = plt.subplots(figsize=(2.0 + 1.7 * len(columns), 1.6 + 1.05 * height))
    palette = ["#e8f0fb", "#fdf0e0", "#e9f6ea", "#f6e9f4", "#f4f4dc", "#e6f4f6"]
    for gi, group in enumerate(dict.fromkeys(resolved.values())):
        pts = [pos[k] for k, g in resolved.items() if g == group]
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        box = FancyBboxPatch(
            (min(xs) - 0.95, min(ys) - 0.6), max(xs) - min(xs) + 1.9, max(ys) - min(ys) + 1.35,
            boxstyle="round,pad=0.05", fc=palette[gi % len(palette)], ec="#9aa7b8", lw=0.8, zorder=0,
        )
        ax.add_patch(box)
        ax.text(min(xs) - 0.9, max(ys) + 0.62, group, fontsize=8, color="#34495e", va="bottom", zorder=1)
    for src, dst, shape in edges:
        (x0, y0), (x1, y1) = pos[src], pos[dst]
        ax.annotate("", xy=(x1 - 0.8, y1), xytext=(x0 + 0.8, y0),
                    arrowprops=dict(arrowstyle="->", color="#7f8c8d", lw=0.8), zorder=2)
        ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.08, str(tuple(shape)), fontsize=6, color="#c0392b",
                ha="center", zorder=4)
    for key, n in nodes.items():
        x, y = pos[key]
        leaf = n["op"] == "leaf"
        label = f"{n['name']}\n{'' if leaf else n['op'] + chr(10)}{tuple(n['shape'])}"
        ax.text(x, y, label, ha="center", va="center", fontsize=7, zorder=3,
                bbox=dict(boxstyle="round,pad=0.3", fc="#fffbe6" if leaf else "white", ec="#2c3e50", lw=0.8))
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    ax.set_xlim(min(xs) - 1.3, max(xs) + 1.3)
    ax.set_ylim(min(ys) - 1.0, max(ys) + 1.2)
    ax.axis("off")
    ax.set_title(title or "forward left to right; gradients (red: their shapes) flow right to left", fontsize=10)
    if path is not None:
        fig.savefig(path, bbox_inches="tight", dpi=150)
        plt.close(fig)
    return fig
