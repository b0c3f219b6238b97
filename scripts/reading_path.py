"""Write docs/reading.md: the reading path from the chapter's equations to the lines of code that compute them.

Each step names a line by what it says (a ``needle``: text found on exactly one line of its file); this script
finds the line's number and links it to the site's copy of the file (``source/<path>.md#L<n>``, pages the
docs build generates: ``scripts/mkdocs_hooks.py``). ``tests/test_reading_path.py`` fails when the page and this
script's output differ, so a line that moves is found again by running::

    python scripts/reading_path.py > docs/reading.md
"""

from __future__ import annotations

import html
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

INTRO = """# Reading path: from the chapter's equations to the code

Read in this order. Each step quotes the equation, then links the line that computes it (and its
backward); the links open tinyattn's own source, line numbered. The shapes are the chapter's: a batch
`B`, `n` tokens, `d_model = E`, `h` heads of `d_k = E / h`. `python -m tinyattn.explain` runs the same
path at the chapter's size and prints every backward step with its line."""

# (title, what the step teaches, [(file, needle, what the line is)])
STEPS: list[tuple[str, str, list[tuple[str, str, str]]]] = [
    ("The five steps, in one function",
     "`MultiHead(X) = Concat(head_1, ..., head_h) W^Oᵀ + b^O`, each step a commented line with its shape.",
     [("tinyattn/nn/functional.py", "def multi_head_attention(", "the function"),
      ("tinyattn/nn/functional.py", "# 1. Project: Q = X W^Qᵀ + b^Q", "step 1, the projections"),
      ("tinyattn/nn/functional.py", "# 2. Split heads: (B, n, E) -> (B, n, h, d_k) -> (B, h, n, d_k)",
       "step 2, splitting the heads"),
      ("tinyattn/nn/functional.py", "# 3. head_i = softmax(Q_i K_iᵀ / √d_k + M) V_i, all heads at once",
       "step 3, attention"),
      ("tinyattn/nn/functional.py", "# 4. Concat(head_1, ..., head_h)", "step 4, the concatenation"),
      ("tinyattn/nn/functional.py", "# 5. Output projection: Concat(...) W^Oᵀ + b^O",
       "step 5, the output projection")]),
    ("A projection and its gradients",
     "`Y = X Wᵀ + b`: `dX = dY W`, `dW = (dY)ᵀ X` (summed over the batch), `db = dY` summed.",
     [("tinyattn/autograd/core/ops/matmul.py", "class LinearFn(Function):", "the op, forward and backward together")]),
    ("Scaled scores and the softmax",
     "`S = Q_h (K_h)ᵀ / √d_k`, `P = softmax(S)`; softmax's backward is `dS = P ⊙ (dP − rowsum(dP ⊙ P))`. Why "
     "`√d_k`: [the argument and its numbers](attention_scale.md).",
     [("tinyattn/nn/functional.py", "def attention(", "attention, step by step"),
      ("tinyattn/autograd/core/ops/matmul.py", "class MatMul(Function):", "`A @ B`: `dA = dC Bᵀ`, `dB = Aᵀ dC`"),
      ("tinyattn/autograd/core/ops/softmax.py", "class Softmax(Function):", "softmax, forward and backward")]),
    ("Heads split and merged",
     "A reshape and a transpose; their backward is the inverse reshape and transpose of the gradient.",
     [("tinyattn/autograd/core/ops/shape.py", "class Reshape(Function):", "reshape"),
      ("tinyattn/autograd/core/ops/shape.py", "class Transpose(Function):", "transpose")]),
    ("Broadcasting, undone in one place",
     "A bias added to every row gets the sum of the rows' gradients.",
     [("tinyattn/autograd/core/ops/shared.py", "def unbroadcast(", "`unbroadcast(grad, shape)`")]),
    ("How an op records itself",
     "`Function.apply` runs `forward` on arrays and records a `Node`: the op, what it saved, where its inputs' "
     "gradients go. The core's files, in the order to read them, are listed in `tinyattn/autograd/core/__init__.py`.",
     [("tinyattn/autograd/core/__init__.py", "The core of tinyattn's autograd", "the core's reading order"),
      ("tinyattn/autograd/core/function.py", "    def apply(cls, *inputs: Any, **options: Any) -> Any:",
       "`Function.apply`"),
      ("tinyattn/autograd/core/function.py", "class Node:", "`Node`")]),
    ("The backward pass",
     "A topological order of the graph, then the chain rule node by node, gradients summed where a tensor is used "
     "more than once (X is used three times in self-attention).",
     [("tinyattn/autograd/core/tensor.py", "    def backward(", "`Tensor.backward`"),
      ("tinyattn/autograd/core/engine.py", "def topological_order(", "the order"),
      ("tinyattn/autograd/core/engine.py", "def backward(", "the chain rule, one node at a time")]),
    ("The same attention without storing P",
     "FlashAttention computes attention in blocks of keys with a running softmax, keeps only each row's "
     "log-sum-exp, and recomputes `P` block by block in its backward.",
     [("tinyattn/autograd/core/ops/flash_attention.py", "class FlashAttention(Function):", "FlashAttention")]),
    ("Gradients of gradients",
     "With `create_graph=True` each backward formula runs on tensors, recorded as ops, so its result can be "
     "differentiated again (the notebook `05_gradients_of_gradients.ipynb`).",
     [("tinyattn/autograd/higher_order.py", "def backward_graph(", "a backward recorded as ops")]),
    ("Forward mode: the other direction",
     "Forward mode carries a tangent beside each value: `J t`, a column of the Jacobian, where backward gives "
     "`vᵀ J`, a row. Each op's tangent follows from what it states already: an elementwise op's is `tx ⊙ f'`, "
     "from its derivative; a linear op's is the op itself on the tangents; a product's, the product rule; "
     "softmax's Jacobian is symmetric, so its tangent is its backward applied to `tX`. Inside "
     "`forward_ad.dual_level()` every op on tinyattn's tensors applies it (the notebook "
     "`06_forward_and_reverse_mode.ipynb`).",
     [("tinyattn/autograd/core/function.py", "    def jvp(cls, tangents: Any, *args: Any, **options: Any)",
       "the jvp each op's statement gives"),
      ("tinyattn/autograd/core/ops/softmax.py", "    symmetric = True", "softmax: a symmetric Jacobian"),
      ("tinyattn/autograd/core/ops/matmul.py", "multilinear = True  # (jvp, the product rule: tA @ B",
       "matmul: the product rule"),
      ("tinyattn/autograd/tangents.py", "def with_tangent(", "each op's value, then its tangent")]),
]


def line_of(path: str, needle: str) -> int:
    """The 1-based number of the one line of ``path`` that holds ``needle``."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        found = [i for i, line in enumerate(f.read().split("\n"), 1) if needle in line]
    if len(found) != 1:
        raise ValueError(f"reading_path: {needle!r} is on {len(found)} lines of {path}, not one")
    return found[0]


def page() -> str:
    """docs/reading.md, as it should read."""
    parts = [INTRO]
    for number, (title, teaches, lines) in enumerate(STEPS, 1):
        parts.append(f"## {number}. {title}\n\n{teaches}\n")
        for path, needle, what in lines:
            at = line_of(path, needle)
            parts.append(f"- {what}: [`{needle.strip()}`](source/{path}.md#L{at}) ({path}:{at})")
    return "\n\n".join(parts).replace("\n\n- ", "\n- ") + "\n"


def source_page(path: str) -> str:
    """The site's page of one source file: its lines, numbered, each an anchor ``L<n>`` the reading path links."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        lines = f.read().split("\n")
    rows = [f'<span id="L{n}"><a href="#L{n}">{n:4d}</a>  {html.escape(line)}</span>'
            for n, line in enumerate(lines, 1)]
    return f"# {path}\n\n<pre class=\"source\">" + "\n".join(rows) + "</pre>\n"


def linked_files() -> list[str]:
    """The source files the page links, for the docs build to render."""
    return sorted({path for _, _, lines in STEPS for path, _, _ in lines})


if __name__ == "__main__":
    sys.stdout.write(page())
