"""Credit where it is earned: each output of a probe scores on its own, and a large input is one output among them.

Graded by the real run_autograder as the student user. An answer with one gradient right and the other wrong
earns the right one's share of each probe; an answer that raises on the large input loses that output alone,
and the feedback says what it raised.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tinyattn.homework import commands

from .gradescope_box import Box, require_isolation, solved_student
from .test_attacks import earned

MATMUL = os.path.join("tinyattn", "autograd", "core", "ops", "matmul.py")
SOFTMAX = os.path.join("tinyattn", "autograd", "core", "ops", "softmax.py")

# dA right; dB missing its transpose, as (dC)ᵀ A: of shape (m, k), wrong wherever it is judged
HALF_RIGHT = """
if ctx.needs_input_grad[0]:
    da = unbroadcast(grad_output @ b.swapaxes(-1, -2), a.shape)
if ctx.needs_input_grad[1]:
    db = unbroadcast(2 * (a.swapaxes(-1, -2) @ grad_output), b.shape)
"""

# log_softmax's backward through an explicit Jacobian, refused by its own author past a thousand columns
SMALL_JACOBIAN = """
(y,) = ctx.saved_tensors
if y.shape[ctx.dim] > 1000:
    raise MemoryError(f"a Jacobian of {y.shape[ctx.dim]} columns is too large for my answer")
p = np.exp(np.moveaxis(y, ctx.dim, -1))
g = np.moveaxis(grad_output, ctx.dim, -1)
jacobian = np.eye(p.shape[-1]) - p[..., None, :]
return (np.moveaxis(np.einsum("...i,...ij->...j", g, jacobian), -1, ctx.dim),)
"""


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    out = tmp_path_factory.mktemp("credit") / "hw"
    commands.assign(str(out), ["matmul_backward", "log_softmax_backward"])
    return str(out)


def _graded(assignment, tmp_path, path, stub_task, code):
    venv = require_isolation()
    box = Box(os.path.join(assignment, "gradescope_autograder.zip"), venv)
    try:
        student = solved_student(assignment, str(tmp_path / "work"), [])
        file = os.path.join(student, path)
        with open(file, encoding="utf-8") as f:
            text = f.read()
        stub = f'raise NotImplementedError("task {stub_task}")'
        at = text.index(stub)
        indent = text[text.rindex("\n", 0, at) + 1:at]
        body = "\n".join(indent + line for line in code.strip("\n").split("\n"))
        with open(file, "w", encoding="utf-8") as f:
            f.write(text.replace(indent + stub, body))
        shutil.copytree(os.path.join(student, "tinyattn"), os.path.join(box.submission, "tinyattn"))
        return box.run(timeout=120)
    finally:
        box.remove()


def _scores(results, task):
    return {t["name"].split(": ")[1]: t["score"] for t in results["tests"] if t["tags"] == [task]}


def test_one_gradient_right_earns_its_share_of_each_probe(assignment, tmp_path):
    results, log = _graded(assignment, tmp_path, MATMUL, "matmul_backward", HALF_RIGHT)
    scores = _scores(results, "matmul_backward")
    # five cases of (dA, dB): five of ten outputs right; the hidden probe's dA, dX and the large dA of five
    assert scores == {"test_matmul_gradients": pytest.approx(1.0),
                      "test_matmul_backward_reference": pytest.approx(2 * 3 / 5)}, log[-3000:]
    outputs = {t["name"]: t["output"] for t in results["tests"] if t["tags"] == ["matmul_backward"]}
    assert "(50% of its outputs are right)" in outputs["matmul_backward: test_matmul_gradients"]
    assert "case0_1:" in outputs["matmul_backward: test_matmul_gradients"]
    assert "case0_0:" not in outputs["matmul_backward: test_matmul_gradients"]
    assert not results["extra_data"]["flags"]


def test_an_answer_that_raises_on_the_large_input_loses_that_output_alone(assignment, tmp_path):
    results, log = _graded(assignment, tmp_path, SOFTMAX, "log_softmax_backward", SMALL_JACOBIAN)
    scores = _scores(results, "log_softmax_backward")
    # the hidden probe's three outputs: two right, the large input's all NaN
    assert scores == {"test_log_softmax_gradients": 1.0, "test_cross_entropy_gradient": 1.0,
                      "test_log_softmax_backward_reference": pytest.approx(2 * 2 / 3)}, log[-3000:]
    assert earned(results, "log_softmax_backward") == pytest.approx(2 + 4 / 3)
    assert "MemoryError: a Jacobian of 4096 columns is too large for my answer" in log
    assert not results["extra_data"]["flags"]
