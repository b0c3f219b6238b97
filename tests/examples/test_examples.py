"""The examples run as a learner would run them, as scripts in a fresh process."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FINAL = re.compile(r"^final: loss=(?P<loss>[-+0-9.eE]+|nan) accuracy=(?P<acc>[0-9.]+) time=(?P<time>[0-9.]+)s$")


def run(script, *args, cwd):
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", script), *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def final_line(stdout):
    match = FINAL.match(stdout.strip().splitlines()[-1])
    assert match, f"last line is not the final line: {stdout.strip().splitlines()[-1]!r}"
    return float(match["loss"]), float(match["acc"]), float(match["time"])


def test_train_toy_short_run_learns_and_draws(tmp_path):
    out = run("train_toy.py", "--steps", "120", "--out", str(tmp_path / "figs"), cwd=tmp_path)
    losses = [float(m) for m in re.findall(r"\| loss ([0-9.]+) \|", out)]
    assert len(losses) >= 5 and losses[-1] < 0.5 * losses[0], out
    for line in out.splitlines()[:-2]:
        assert re.match(r"^step \d+/120 \| loss [0-9.]+ \| acc [0-9.]+ \| \d+ it/s$", line), line
    loss, acc, _ = final_line(out)
    assert acc > 0.3  # chance is 0.1
    for name in ("training_curve.png", "attention_heads.png"):
        path = tmp_path / "figs" / name
        assert path.stat().st_size > 10_000 and path.read_bytes()[:4] == b"\x89PNG"


def test_train_toy_is_deterministic_given_seed(tmp_path):
    a = final_line(run("train_toy.py", "--steps", "40", "--seed", "3", "--quiet", "--out", "a", cwd=tmp_path))
    b = final_line(run("train_toy.py", "--steps", "40", "--seed", "3", "--quiet", "--out", "b", cwd=tmp_path))
    assert a[:2] == b[:2]


@pytest.mark.slow
def test_train_toy_defaults_reach_the_target(tmp_path):
    out = run("train_toy.py", cwd=tmp_path)
    loss, acc, seconds = final_line(out)
    assert acc >= 0.99, out
    assert seconds <= 60, out
    assert (tmp_path / "figures" / "attention_heads.png").exists()


def test_chapter_demo_prints_shapes_and_saves_figure(tmp_path):
    out = run("chapter_8_4.py", "--out", str(tmp_path), cwd=tmp_path)
    assert "Input shape: (3, 5, 16)" in out
    assert "Attention weights shape: (3, 2, 5, 5)" in out
    assert "Output shape: (3, 5, 16)" in out
    svg = (tmp_path / "ch8.4-multi-head-attn-weights.svg").read_text()
    assert svg.startswith("<?xml") and "Head 2 Attention Weights" in svg


def test_gradient_demo_agrees_with_finite_differences(tmp_path):
    out = run("gradient_demo.py", cwd=tmp_path)
    diffs = [float(d) for d in re.findall(r"max \|difference\| = ([0-9.e+-]+)", out)]
    assert len(diffs) == 2 and max(diffs) < 1e-6
