"""The walkthrough as one self-contained HTML page: the graph as inline SVG, a panel for the
selected step, a step control that walks the backward in the engine's order, and the heads'
attention maps. No network: the CSS, the script, the SVG and the data are all in the file.
"""

from __future__ import annotations

import ast
import html
import io
import json
import os
from typing import Any

import numpy as np

from .cost import step_cost
from .graph import dom_id, draw_graph, graph_of
from .trace import _PACKAGE_ROOT, Trace, grad_name

_MAX_CELLS = 32  # a value heatmap shows at most 32 × 32 entries of a gradient


def _heat(array: np.ndarray) -> list[list[float]]:
    """A 2-D slice of ``array`` to draw: the first index of every leading dim, at most 32 × 32."""
    a = np.asarray(array, dtype=np.float64)
    while a.ndim > 2:
        a = a[0]
    a = a.reshape(1, -1) if a.ndim == 1 else a.reshape(1, 1) if a.ndim == 0 else a
    return [[float(f"{v:.4g}") for v in row] for row in a[:_MAX_CELLS, :_MAX_CELLS]]


def _code(source: str) -> dict[str, Any]:
    """The backward's own source lines, numbered, from ``path:line (Op.backward)`` (none from a bare name)."""
    if ":" not in source:
        return {"path": "", "start": 0, "lines": []}
    path, rest = source.split(":", 1)
    start = int(rest.split(" ")[0])
    try:
        with open(os.path.join(_PACKAGE_ROOT, path), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return {"path": path, "start": start, "lines": []}
    defs = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.lineno == start]
    end = defs[0].end_lineno if defs and defs[0].end_lineno else start
    return {"path": path, "start": start, "lines": text.splitlines()[start - 1:end]}  # the def and its body


def _svg(steps: Trace, groups: dict[str, str], title: str) -> str:
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "tinyattn"}):
        fig = draw_graph(steps, groups=groups, title=title)
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})  # no date: the same page every time
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def page_data(steps: Trace, weights: np.ndarray | None) -> dict[str, Any]:
    """What the page's script reads: one entry per step in the engine's order, and the heads' maps."""
    _, edges = graph_of(steps)
    into: dict[int, list[str]] = {}
    for i, (src, dst, _) in enumerate(edges):
        into.setdefault(dst[1], []).append(f"edge-{i}-{dom_id(src)}-to-{dom_id(dst)}")
    entries = []
    for step in steps:
        cost = step_cost(step)
        highlight = []
        for g in step.grads:
            lines = g.source.split(":", 1)[1]
            first, _, last = lines.partition("–")
            highlight += list(range(int(first), int(last or first) + 1))
        entries.append({
            "index": step.index, "op": step.op, "output": step.output, "forward": step.forward,
            "node": dom_id(("step", step.index)), "edges": into.get(step.index, []),
            "arrives": f"{grad_name(step.output, step.order)} {tuple(step.grad_output_shape)}",
            "grads": [{"name": grad_name(g.name, step.order), "formula": g.formula, "shape": str(tuple(g.shape)),
                       "source": g.source, "heat": _heat(g.array)} for g in step.grads],
            "flops": list(cost) if cost is not None else None,
            "saved": int(sum(b for _, _, b in step.saved)),
            "code": _code(step.source), "highlight": highlight,
        })
    heads = [] if weights is None else [_heat(weights[0, h]) for h in range(weights.shape[1])]
    return {"steps": entries, "heads": heads}


_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #222; }
header { padding: 10px 16px; background: #2c3e50; color: #fff; }
header h1 { font-size: 17px; margin: 0; }
#graph { overflow: auto; border-bottom: 1px solid #ccc; max-height: 55vh; }
#graph svg { height: auto; }
#graph [id^="node-step-"] { cursor: pointer; }
#graph [id$="-label"] { pointer-events: none; }  /* a click on a box's text goes to the box */
.current path { stroke: #e67e22 !important; stroke-width: 3px !important; fill: #fdebd0 !important; }
.flow path, path.flow { stroke: #e67e22 !important; stroke-width: 2.2px !important; }
#controls { padding: 8px 16px; display: flex; gap: 10px; align-items: center; background: #f4f6f8; }
#controls button { font-size: 14px; padding: 3px 12px; }
main { display: flex; gap: 24px; padding: 12px 16px; flex-wrap: wrap; }
#panel { flex: 3 1 520px; }
#heads { flex: 1 1 260px; }
#equation { white-space: pre-wrap; font-size: 16px; font-family: ui-monospace, monospace;
            background: #fffbe6; padding: 6px 8px; }
.grad { margin: 8px 0; }
.formula { font-family: ui-monospace, monospace; white-space: pre-wrap; }
.shape { color: #c0392b; font-family: ui-monospace, monospace; }
pre { background: #f7f7f7; padding: 6px; font-size: 12px; overflow: auto; }
pre .hl { background: #fdebd0; display: inline-block; width: 100%; }
.heat { display: inline-block; margin: 2px 8px 2px 0; vertical-align: top; }
.muted { color: #777; }
"""

_SCRIPT = """
const DATA = JSON.parse(document.getElementById('data').textContent);
const N = DATA.steps.length;
let current = 0;
function colour(v, scale, diverging) {
  const t = scale > 0 ? Math.max(-1, Math.min(1, v / scale)) : 0;
  if (!diverging) { const c = Math.round(255 - 200 * Math.abs(t)); return `rgb(255,${c},${c})`; }
  const c = Math.round(255 - 200 * Math.abs(t));
  return t >= 0 ? `rgb(255,${c},${c})` : `rgb(${c},${c},255)`;
}
function heatmap(values, diverging, label) {
  const rows = values.length, cols = values[0].length, cell = Math.max(4, Math.min(14, 160 / Math.max(rows, cols)));
  let scale = 0;
  values.forEach(r => r.forEach(v => { scale = Math.max(scale, Math.abs(v)); }));
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('width', cols * cell); svg.setAttribute('height', rows * cell);
  values.forEach((r, i) => r.forEach((v, j) => {
    const rect = document.createElementNS(ns, 'rect');
    rect.setAttribute('x', j * cell); rect.setAttribute('y', i * cell);
    rect.setAttribute('width', cell); rect.setAttribute('height', cell);
    rect.setAttribute('fill', colour(v, scale, diverging));
    const tip = document.createElementNS(ns, 'title'); tip.textContent = v; rect.appendChild(tip);
    svg.appendChild(rect);
  }));
  const box = document.createElement('div'); box.className = 'heat';
  const cap = document.createElement('div'); cap.className = 'muted'; cap.textContent = label;
  box.appendChild(svg); box.appendChild(cap);
  return box;
}
function text(tag, content, cls) {
  const el = document.createElement(tag); el.textContent = content; if (cls) el.className = cls; return el;
}
function select(k) {
  document.querySelectorAll('.current, .flow').forEach(el => el.classList.remove('current', 'flow'));
  current = Math.max(0, Math.min(N, k));
  document.getElementById('counter').textContent =
    current ? `step ${current} of ${N}` : `${N} steps: click a node or press Next`;
  const panel = document.getElementById('panel');
  panel.innerHTML = '';
  if (!current) {
    panel.appendChild(text('p', 'The backward pass runs from the output (step 1) back to the inputs, ' +
                                'in the engine\\'s order.', 'muted'));
    return;
  }
  const s = DATA.steps[current - 1];
  const node = document.getElementById(s.node);
  if (node) { node.classList.add('current'); node.scrollIntoView({block: 'nearest', inline: 'center'}); }
  s.edges.forEach(id => { const e = document.getElementById(id); if (e) e.classList.add('flow');
                          const p = document.getElementById(id + '-path'); if (p) p.classList.add('flow'); });
  panel.appendChild(text('h2', `[${s.index}] ${s.op}`));
  panel.appendChild(text('div', s.forward)).id = 'equation';
  panel.appendChild(text('p', `arrives: ${s.arrives}`, 'muted'));
  s.grads.forEach(g => {
    const div = document.createElement('div'); div.className = 'grad';
    div.appendChild(text('span', g.formula, 'formula')); div.appendChild(text('span', '  ' + g.shape, 'shape'));
    div.appendChild(text('div', `computed at ${g.source}`, 'muted'));
    div.appendChild(heatmap(g.heat, true, `${g.name} (a slice)`));
    panel.appendChild(div);
  });
  const cost = s.flops ? `FLOPs: ${s.flops[0].toLocaleString('en')} forward, ` +
                         `${s.flops[1].toLocaleString('en')} backward` : 'FLOPs: ?';
  panel.appendChild(text('p', `${cost}; saved for backward: ${s.saved.toLocaleString('en')} B`, 'cost'));
  const pre = document.createElement('pre');
  s.code.lines.forEach((line, i) => {
    const n = s.code.start + i;
    const span = text('span', `${String(n).padStart(4)}  ${line}`, s.highlight.includes(n) ? 'hl' : '');
    pre.appendChild(span); pre.appendChild(document.createTextNode('\\n'));
  });
  panel.appendChild(text('div', s.code.path, 'muted'));
  panel.appendChild(pre);
}
document.querySelectorAll('#graph [id^="node-step-"]').forEach(el => {
  const m = el.id.match(/^node-step-(\\d+)/);
  if (m) el.addEventListener('click', () => select(parseInt(m[1], 10)));
});
document.getElementById('next').addEventListener('click', () => select(current + 1));
document.getElementById('prev').addEventListener('click', () => select(current - 1));
document.addEventListener('keydown', e => { if (e.key === 'ArrowRight') select(current + 1);
                                            if (e.key === 'ArrowLeft') select(current - 1); });
const heads = document.getElementById('heads');
if (DATA.heads.length) {
  heads.appendChild(text('h2', 'Attention weights P, per head (first sample)'));
  DATA.heads.forEach((h, i) => heads.appendChild(heatmap(h, false, `head ${i + 1}: queries down, keys across`)));
}
select(0);
"""


def page(steps: Trace, title: str, groups: dict[str, str], weights: np.ndarray | None = None) -> str:
    """The HTML text of the page."""
    data = json.dumps(page_data(steps, weights)).replace("</", "<\\/")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_STYLE}</style></head>
<body>
<header><h1>{html.escape(title)}</h1>
<div>Each box is a tensor; each arrow a value passed forward, along which its gradient flows back.
Select a step to see its equation, its gradients with their shapes, its cost and the code that computes them.</div>
</header>
<div id="graph">{_svg(steps, groups, "")}</div>
<div id="controls"><button id="prev">◀ Previous</button><button id="next">Next ▶</button>
<span id="counter"></span></div>
<main><section id="panel"></section><section id="heads"></section></main>
<script type="application/json" id="data">{data}</script>
<script>{_SCRIPT}</script>
</body></html>
"""
