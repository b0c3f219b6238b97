"""The explainer command: the walkthrough's content, cross-attention, masks, pictures; docs kept in step."""

import os
import re
import subprocess
import sys

import pytest

from tinyattn.explain import mha as explain

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def walkthrough(*argv):
    return explain.walkthrough(explain.parser().parse_args(list(argv)))


def test_default_walkthrough_names_each_formula_and_shape():
    text = walkthrough()
    assert "B=3, n=5, d_model=16, h=2, d_k=8" in text
    for formula, shape in [
        ("dconcat = dattn_output W^O", "(3, 5, 16)"),
        ("dP = dheads @ V_hᵀ", "(3, 2, 5, 5)"),
        ("dS = P ⊙ (dP − rowsum(dP ⊙ P))", "(3, 2, 5, 5)"),
        ("dQ_h = dQKᵀ @ K_h", "(3, 2, 5, 8)"),
        ("dW^Q = dQᵀ X  (summed over batch and positions)", "(16, 16)"),
        ("dW^K = dKᵀ X  (summed over batch and positions)", "(16, 16)"),
        ("dW^V = dVᵀ X  (summed over batch and positions)", "(16, 16)"),
        ("dW^O = dattn_outputᵀ concat  (summed over batch and positions)", "(16, 16)"),
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
    assert "dK_hᵀ = Q_hᵀ @ dQKᵀ" in text and "-> (3, 2, 8, 7)" in text
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
    assert text.startswith("digraph") and "cluster_" in text and 'label="grad (3, 2, 5, 5)"' in text


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
    assert generated == explain.docs_block(), stale
    tool = walkthrough() + "\n" + walkthrough("--mask", "causal") + "\n" + walkthrough("--fused")
    # every backward formula the prose quotes (a backticked `dZ = ...`) is one the tool prints
    prose = doc.split(begin)[0]
    quoted = re.findall(r"`(d[A-Zhcti][^`\s]* = [^`]*)`", prose)
    assert len(quoted) >= 12
    for formula in quoted:
        assert formula in tool, formula
