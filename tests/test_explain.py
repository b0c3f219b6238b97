"""The explainer command: the walkthrough's content, cross-attention, masks, pictures; docs kept in step."""

import itertools
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.explain import mha as explain
from tinyattn.explain.trace import trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def walkthrough(*argv):
    return explain.walkthrough(explain.parser().parse_args(list(argv)))


def test_default_walkthrough_names_each_formula_and_shape():
    text = walkthrough()
    assert "B=3, n=5, d_model=16, h=2, d_k=8" in text
    for formula, shape in [
        ("dconcat = dattn_output W^O", "(3, 5, 16)"),
        ("dP = dheads @ (V_h)ᵀ", "(3, 2, 5, 5)"),
        ("dS = P ⊙ (dP − rowsum(dP ⊙ P))", "(3, 2, 5, 5)"),
        ("dQ_h = d(QKᵀ) @ K_h", "(3, 2, 5, 8)"),
        ("dW^Q = (dQ)ᵀ X  (summed over batch and positions)", "(16, 16)"),
        ("dW^K = (dK)ᵀ X  (summed over batch and positions)", "(16, 16)"),
        ("dW^V = (dV)ᵀ X  (summed over batch and positions)", "(16, 16)"),
        ("dW^O = (dattn_output)ᵀ concat  (summed over batch and positions)", "(16, 16)"),
        ("dX = dQ W^Q", "(3, 5, 16)"),
    ]:
        line = next((ln for ln in text.splitlines() if formula in ln), None)
        assert line is not None, formula
        assert f"-> {shape}" in line, line
    landing = text.split("Where the gradients land")[1]
    for name in ["dL/dW^O", "dL/dW^Q", "dL/dW^K", "dL/dW^V", "dL/dX"]:
        assert re.search(rf"{re.escape(name)}\s+\(.*✓ matches", landing), name
    assert "DIFFERS" not in text


def test_cross_attention_and_masks():
    text = walkthrough("--kv-len", "7", "--mask", "padding")
    assert "cross-attention, keys/values of length 7" in text
    assert "d(K_h)ᵀ = (Q_h)ᵀ @ d(QKᵀ)" in text and "-> (3, 2, 8, 7)" in text
    assert "S_m = S + M" in text
    assert re.search(r"dL/dX_q .*✓ matches", text) and re.search(r"dL/dX_kv .*✓ matches", text)
    causal = walkthrough("--mask", "causal", "--table")
    assert "dS = dS_m" in causal and "DIFFERS" not in causal


def test_graph_pictures_render_headless(tmp_path):
    png, svg, dot = tmp_path / "g.png", tmp_path / "g.svg", tmp_path / "g.dot"
    walkthrough("--graph", str(png), "--dot", str(dot))
    walkthrough("--kv-len", "4", "--mask", "causal", "--graph", str(svg))
    assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 20_000
    assert "<svg" in svg.read_text() and "Softmax" in svg.read_text()
    text = dot.read_text()
    assert text.startswith("digraph") and "cluster_" in text and 'label="(3, 2, 5, 5)"' in text
    assert "each gradient flows back along its arrow" in text


def segment_hits_box(p, q, box, steps=60):
    """True if the segment p-q passes through the interior of ``box`` (sampled finely)."""
    from tinyattn.explain.graph import Box

    inner = Box(box.x, box.y, box.w - 0.02, box.h - 0.02)
    return any(inner.contains(Box(p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1]), 0, 0))
               for t in (i / steps for i in range(1, steps)))


@pytest.mark.parametrize("argv", [[], ["--mask", "causal"], ["--kv-len", "7", "--mask", "padding"], ["--fused"],
                                  ["--heads", "4", "--seq", "3"]])
def test_graph_layout_has_no_overlaps(argv):
    """From the layout's coordinates: boxes, labels, stages and edges never collide."""
    from tinyattn.explain.graph import layout

    _, _, steps = explain.build(explain.parser().parse_args(argv))
    lay = layout(steps, explain.MHA_GROUPS)
    nodes, labels = list(lay.nodes.items()), [e[2] for e in lay.edges]
    for (ka, a), (kb, b) in itertools.combinations(nodes, 2):
        assert not a.overlaps(b), (lay.labels[ka], lay.labels[kb])
    for (text_a, a), (text_b, b) in itertools.combinations([(e[1], e[2]) for e in lay.edges], 2):
        assert not a.overlaps(b), (text_a, text_b)
    for label in labels:
        assert not any(label.overlaps(b) for _, b in nodes)
    for a, b in itertools.combinations(lay.stages.values(), 2):
        assert not a.overlaps(b)
    stage_boxes = list(lay.stages.values())
    for _, b in nodes:  # every node sits in exactly one stage box
        assert sum(s.contains(b) for s in stage_boxes) == 1
    for stage, (title, _) in lay.titles.items():
        assert lay.stages[stage].contains(title)
    for points, text, _ in lay.edges:  # an edge touches only its own two nodes
        ends = {points[0], points[-1]}
        for p, q in zip(points, points[1:]):
            for key, b in nodes:
                touching = any(abs(e[0] - b.x) * 2 <= b.w + 1e-6 and abs(e[1] - b.y) * 2 <= b.h + 1e-6 for e in ends)
                assert touching or not segment_hits_box(p, q, b), (text, lay.labels[key])


def test_module_entry_point_runs():
    result = subprocess.run([sys.executable, "-m", "tinyattn.explain", "--table"], capture_output=True,
                            text=True, encoding="utf-8", cwd=ROOT, env={**os.environ, "MPLBACKEND": "Agg"})
    assert result.returncode == 0, result.stderr
    assert "dS = P ⊙ (dP − rowsum(dP ⊙ P))" in result.stdout


def test_bad_options_are_rejected():
    with pytest.raises(SystemExit):
        explain.main(["--d-model", "10", "--heads", "3"])


def test_docs_gradients_md_is_in_step_with_the_tool():
    with open(os.path.join(ROOT, "docs", "gradients.md"), encoding="utf-8") as f:
        doc = f.read()
    begin = "<!-- BEGIN GENERATED: python -m tinyattn.explain --docs-block -->\n"
    generated = doc.split(begin)[1].split("<!-- END GENERATED -->")[0].rstrip("\n")
    stale = "docs/gradients.md is stale: paste the output of `python -m tinyattn.explain --docs-block`"
    # Source lines are compared by what they point at, not by number: a number moves whenever a file above
    # the function changes (and under mutation testing, whose rewritten files shift every line).
    without_lines = re.compile(r"(\.py):\d+ \(")
    assert without_lines.sub(r"\1:N (", generated) == without_lines.sub(r"\1:N (", explain.docs_block()), stale
    for path, line, function in re.findall(r"`(tinyattn/\S+\.py):(\d+) \((\w+)\.backward\)`", generated):
        source = pathlib.Path(ROOT, path).read_text(encoding="utf-8")
        assert f"class {function}(" in source, (path, function)
        if "MUTANT_UNDER_TEST" not in os.environ:  # the line itself, in the unmutated source
            assert "def backward" in source.splitlines()[int(line) - 1], (path, line, stale)
    tool = "\n".join([walkthrough(), walkthrough("--mask", "causal"), walkthrough("--fused"),
                      walkthrough("--fused", "--kv-len", "7")])
    # every backward formula the prose quotes (a backticked `dZ = ...`) is one the tool prints
    prose = doc.split(begin)[0]
    quoted = re.findall(r"`(d[A-Zhcti][^`\s]* = [^`]*)`", prose)
    assert len(quoted) >= 12
    for formula in quoted:
        assert formula in tool, formula


# One notation: weights stored (out, in) as torch stores them, so every projection reads X Wᵀ + b,
# and a transposed name with a subscript is parenthesized.
OTHER_SPELLINGS = re.compile(
    r"\b(?:X|X_q|X_kv|concat|Concat\([^)]*\)) W\^[QKVO](?!ᵀ)"  # a projection written X W instead of X Wᵀ
    r"|W_i\^|\b[QKV]_hᵀ|dQKᵀ|\bd[A-Za-z_^]+ᵀ [A-Za-z]"  # per-head W_i^Q; K_hᵀ; dQKᵀ; dQᵀ X for (dQ)ᵀ X
)


def test_one_notation_in_the_library_the_docs_and_the_explainer(tmp_path):
    texts = {}
    for folder in ("tinyattn", "docs", "examples"):
        for path in pathlib.Path(ROOT, folder).rglob("*"):
            if path.suffix in (".py", ".md"):
                texts[str(path)] = path.read_text(encoding="utf-8")
    texts["README.md"] = pathlib.Path(ROOT, "README.md").read_text(encoding="utf-8")
    for argv in [(), ("--fused",), ("--mask", "causal"), ("--kv-len", "7")]:
        texts[f"explain {argv}"] = walkthrough(*argv)
    dot = tmp_path / "g.dot"
    walkthrough("--dot", str(dot))
    texts["--dot"] = dot.read_text(encoding="utf-8")
    for where, text in texts.items():
        for line in text.splitlines():
            assert not OTHER_SPELLINGS.search(line), f"{where}: {line.strip()}"


def test_unnamed_tensors_are_called_after_their_shape_never_after_a_guess():
    """A student's attention without .named(): every label is a given name or "tN (shape)"."""
    rng = np.random.default_rng(0)
    x = ta.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    w_q, w_k = (ta.tensor(rng.standard_normal((4, 4)), requires_grad=True) for _ in range(2))
    with trace() as steps:
        q, k = x @ w_q, x @ w_k  # unnamed
        p = (q @ k.transpose(-2, -1)).softmax(-1)
        (p @ x).backward(rng.standard_normal((2, 3, 4)))
    labels = {s.output for s in steps} | {g.name for s in steps for g in s.grads}
    for label in labels:
        assert re.fullmatch(r"t\d+ \(\d+(, \d+)*\)", label) or label in ("X", "const"), label
    assert not {"K", "Q", "Kᵀ"} & labels


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--kv-len", "0"], "--kv-len: must be at least 1, got 0"),
        (["--kv-len", "-3"], "--kv-len: must be at least 1, got -3"),
        (["--seq", "0"], "--seq: must be at least 1, got 0"),
        (["--heads", "two"], "--heads: expected a whole number, got 'two'"),
        (["--graph", "/missing_dir/g.png"], "--graph: folder /missing_dir does not exist"),
        (["--graph", "g.jpeg"], "--graph: expected a .png, .svg or .pdf file name"),
        (["--dot", "/missing_dir/g.dot"], "--dot: folder /missing_dir does not exist"),
        (["--d-model", "10", "--heads", "3"], "--d-model (10) must be divisible by --heads (3)"),
    ],
)
def test_bad_arguments_give_one_clear_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        explain.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cost_view_matches_a_hand_count():
    """B=3, n=5, d_model=16, h=2, d_k=8, float64 (8 bytes): the numbers worked out by hand."""
    from tinyattn.explain.cost import cost_table, grows_as_n_squared, step_cost

    _, _, steps = explain.build(explain.parser().parse_args([]))
    by_output = {s.output: s for s in steps}
    B, n, E, h, d_k = 3, 5, 16, 2, 8
    linear = 2 * (B * n * E) * E  # (15, 16) @ (16, 16): 7,680
    assert step_cost(by_output["attn_output"]) == (linear + B * n * E, 2 * linear + B * n * E)  # + bias; dX, dW, db
    assert step_cost(by_output["heads"]) == (2 * (B * h * n * d_k) * n, 2 * 2 * (B * h * n * d_k) * n)  # P @ V_h
    assert step_cost(by_output["QKᵀ"]) == (2 * (B * h * n * n) * d_k, 4 * (B * h * n * n) * d_k)  # Q_h @ (K_h)ᵀ
    assert step_cost(by_output["P"]) == (5 * B * h * n * n, 4 * B * h * n * n)  # softmax
    assert step_cost(by_output["concat"]) == (0, 0)  # a reshape moves data only
    assert sum(b for _, _, b in by_output["P"].saved) == B * h * n * n * 8  # P, kept for the backward
    assert sum(b for _, _, b in by_output["attn_output"].saved) == (B * n * E + E * E) * 8  # concat and W^O
    assert grows_as_n_squared(by_output["P"], (n, n)) == (True, True)
    assert grows_as_n_squared(by_output["QKᵀ"], (n, n)) == (True, False)  # computes n × n, keeps Q_h and (K_h)ᵀ
    assert grows_as_n_squared(by_output["Q"], (n, n)) == (False, False)
    table = cost_table(steps, (n, n))
    forward = 4 * (linear + B * n * E) + 2 * 2400 + 750 + 150  # 4 projections, 2 matmuls, softmax, scale
    backward = 4 * (2 * linear + B * n * E) + 2 * 4800 + 600 + 150
    # saved, each array once: X, the four weights, concat, Q_h, (K_h)ᵀ, V_h and P
    saved = (B * n * E + 4 * E * E + B * n * E + 3 * B * h * n * d_k + B * h * n * n) * 8
    total_line = next(line for line in table.splitlines() if "total" in line)
    assert total_line.split()[1:] == [f"{forward:,}", f"{backward:,}", f"{saved:,}", "B"]
    assert f"{2 * 2400 + 2 * 4800 + 1350 + 300:,} of {forward + backward:,} FLOPs" in table


def test_fused_walkthrough_runs_the_recompute_it_describes():
    args = explain.parser().parse_args(["--fused"])
    _, _, steps = explain.build(args)
    # self-attention: one product for Q, K and V, FlashAttention on them stacked, and the walkthrough shows that
    assert [s.op for s in steps][-4:] == ["PackedFlashAttention", "Permute", "Reshape", "LinearFn"]
    flash = next(s for s in steps if s.op == "PackedFlashAttention")
    B, h, n = args.batch, args.heads, args.seq
    assert all(shape != (B, h, n, n) for _, shape, _ in flash.saved)  # P is not kept: it is recomputed
    text = explain.walkthrough(args)
    assert "the 5 keys come in 3 blocks of up to 2" in text
    one_block = explain.walkthrough(explain.parser().parse_args(["--fused", "--seq", "2"]))
    assert "the 2 keys fit in one block, whose P the backward recomputes all the same" in one_block
    # and outside the walkthrough the library's own default is back
    assert ta.nn.functional.scaled_dot_product_attention.__kwdefaults__["block_size"] == 128
    assert ta.nn.functional.packed_attention.__kwdefaults__["block_size"] == 128


def test_fused_self_attention_walkthrough_shows_the_packed_product_it_runs():
    text = explain.walkthrough(explain.parser().parse_args(["--fused"]))
    for line in ("[ 7] LinearFn   QKV = X (in_proj_weight)ᵀ + in_proj_bias",
                 "[ 6] Reshape    t2 (3, 5, 3, 2, 8) = QKV.",
                 "[ 5] Permute    QKV_h = t2 (3, 5, 3, 2, 8).permute(p)",
                 "[ 4] PackedFlashAttention heads = softmax(",
                 "[ 3] Transpose  t1 (3, 5, 2, 8) = heads.transpose(1, 2)",
                 "[ 2] Reshape    concat = t1 (3, 5, 2, 8)"):
        assert line in text, line
    assert "W^Q = " not in text  # (no slice of in_proj_weight: the product takes all of it)
    assert text.count("✓ matches") == 5 and "DIFFERS" not in text  # W^Q, W^K, W^V: rows of in_proj_weight.grad
    cross = explain.walkthrough(explain.parser().parse_args(["--fused", "--kv-len", "7"]))
    assert "W^Q = in_proj_weight[:16]" in cross and "QKV" not in cross  # cross-attention: three projections
    assert "[ 4] FlashAttention" in cross


def test_each_gradient_points_at_the_line_that_computes_it():
    _, _, steps = explain.build(explain.parser().parse_args([]))
    expected = {("LinearFn", 0): "dx =", ("LinearFn", 1): "dw =", ("LinearFn", 2): "db =",
                ("Softmax", 0): "grad_input", ("MatMul", 0): "da =", ("MatMul", 1): "db ="}
    checked = set()
    for step in steps:
        for g in step.grads:
            path, lines = g.source.split(":")
            first, _, last = lines.partition("–")
            source = pathlib.Path(ROOT, path).read_text(encoding="utf-8").splitlines()
            span = source[int(first) - 1: int(last or first)]
            key = (step.op, g.position)
            if key in expected:
                assert any(expected[key] in line for line in span), (key, g.source, span)
                checked.add(key)
            assert "def backward" not in span[0], g.source  # not the def line any more
    assert checked == set(expected)
    assert re.search(r"backward: tinyattn/autograd/core/ops/matmul\.py:\d+ \(dconcat\), :\d+ \(dW\^O\), :\d+ \(db\^O\) "
                     r"\(LinearFn\.backward\)", str(steps[0]))


def test_the_notebook_graph_wraps_to_a_notebooks_width():
    from tinyattn.explain import walkthrough
    from tinyattn.explain.graph import draw_graph

    w = walkthrough()
    wide = draw_graph(w.steps, groups=explain.MHA_GROUPS)
    wrapped = w.graph()
    assert wide.get_size_inches()[0] * 100 > 2000  # one band: too wide to read once scaled to a notebook
    assert wrapped.get_size_inches()[0] * 100 < 1000 and len(wrapped.axes) == 3
    png = wrapped._repr_png_()
    assert png[:4] == b"\x89PNG" and len(png) > 20_000


def test_walkthrough_of_a_students_own_module_and_its_reprs():
    from tinyattn import nn
    from tinyattn.explain import trace, walkthrough

    ta.manual_seed(0)
    block = nn.Sequential(nn.Linear(4, 3), nn.GELU(), nn.Linear(3, 2))
    w = walkthrough(module=block, inputs=ta.randn(5, 4, requires_grad=True))
    assert [s.op for s in w.steps] == ["LinearFn", "GELUFn", "LinearFn"]
    html = w._repr_html_()
    assert html.count("<tr>") == 1 + 3 and "GELUFn" in html and w.text() == str(w.steps)
    assert "<iframe srcdoc=" in w.page()._repr_html_() and "&lt;!DOCTYPE html&gt;" in w.page()._repr_html_()
    with pytest.raises(ValueError, match="no attention weights"):
        w.heatmaps()
    with trace() as steps:  # a trace of one's own code gets the same views
        (block(ta.randn(2, 4)) ** 2).sum().backward()
    assert "<table class='tinyattn-steps'" in steps._repr_html_() and steps.text() == str(steps)
    assert "DOCTYPE html" in steps.html() and steps.graph()._repr_png_()[:4] == b"\x89PNG"
