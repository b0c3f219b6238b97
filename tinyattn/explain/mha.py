"""Walk through the backward pass of multi-head attention, step by step.

    python -m tinyattn.explain                      # the chapter's size: B=3, n=5, d_model=16, h=2
    python -m tinyattn.explain --kv-len 7           # cross-attention: keys/values from another sequence
    python -m tinyattn.explain --mask causal        # or: padding
    python -m tinyattn.explain --fused              # attention as one FlashAttention step
    python -m tinyattn.explain --cost               # FLOPs and saved bytes of every step
    python -m tinyattn.explain --graph graph.png    # also draw the computation graph (--dot graph.dot)
    python -m tinyattn.explain --html page.html     # the interactive page: open it in a browser

It builds a MultiheadAttention, runs it forward on random inputs, sets
``L = sum(attn_output ⊙ R)`` for a random ``R`` (so ``dL/d attn_output = R``),
and prints every step of the backward pass from ``dL/d attn_output`` back to
``dL/dW^O``, ``dL/dW^Q``, ``dL/dW^K``, ``dL/dW^V`` and ``dL/dX``: the op, its
forward equation, the gradient that arrives, the formula of each gradient it
sends on with its shape, and the source line of that backward.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Iterator, Sequence

import numpy as np

from .. import __version__, autograd, nn
from ..nn import functional as F
from .trace import Trace, trace

# The stages of MultiheadAttention.forward, by the names it gives its tensors
MHA_GROUPS = {
    **dict.fromkeys(
        ["in_proj_weight", "in_proj_bias", "W^Q", "W^K", "W^V", "b^Q", "b^K", "b^V", "Q", "K", "V", "QKV"],
        "1. project: Q = X W^Qᵀ + b^Q, K = X W^Kᵀ + b^K, V = X W^Vᵀ + b^V",
    ),
    **dict.fromkeys(["Q_h", "K_h", "V_h", "(K_h)ᵀ", "QKV_h"], "2. split heads: (B, n, E) -> (B, h, n, d_k)"),
    **dict.fromkeys(["QKᵀ", "S", "S_m", "P", "P_drop", "heads"], "3. attention: softmax(Q Kᵀ / √d_k) V"),
    "concat": "4. concat heads: (B, h, n, d_k) -> (B, n, E)",
    **dict.fromkeys(["attn_output", "W^O", "b^O"], "5. output projection: attn_output = concat W^Oᵀ + b^O"),
}


FUSED_KEY_BLOCK = 2  # keys per FlashAttention block in the --fused walkthrough (the library's default is 128)


@contextlib.contextmanager
def key_blocks(size: int) -> Iterator[None]:
    """FlashAttention's number of keys per block, set to ``size`` inside the block.

    At the chapter's size (n = 5) the default of 128 keys makes a single block, and with one
    block FlashAttention keeps ``P`` instead of recomputing it. The walkthrough uses blocks
    smaller than ``n``, so that what runs, and what it shows, is the recompute.
    """
    # (packed_attention: FlashAttention on self-attention's packed heads); block_size is keyword-only in both.
    # A function wrapped by a tool that keeps no defaults (mutmut's trampolines) is left as it is.
    functions = (F.scaled_dot_product_attention, F.packed_attention)
    defaults = [d for d in (f.__kwdefaults__ for f in functions) if d and "block_size" in d]
    previous = [d["block_size"] for d in defaults]
    for d in defaults:
        d["block_size"] = size
    try:
        yield
    finally:
        for d, p in zip(defaults, previous):
            d["block_size"] = p


def masks(args: argparse.Namespace) -> dict[str, np.ndarray]:
    """The MultiheadAttention mask arguments ``--mask`` asks for (True = masked out)."""
    L = args.seq
    S = args.kv_len or L
    if args.mask == "causal":
        return {"attn_mask": np.triu(np.ones((L, S), dtype=bool), k=1)}
    if args.mask == "padding":
        padding = np.zeros((args.batch, S), dtype=bool)
        padding[:, S - 1] = True  # the last key of every sequence is padding
        return {"key_padding_mask": padding}
    return {}


Built = tuple[nn.MultiheadAttention, dict[str, autograd.Tensor], Trace]


def build(args: argparse.Namespace) -> Built:
    """Run the configured MHA forward and a traced backward; return the module, its inputs and the trace."""
    autograd.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    B, L, E, h = args.batch, args.seq, args.d_model, args.heads
    S = args.kv_len or L  # (None: self-attention)
    mha = nn.MultiheadAttention(E, h, batch_first=True, dtype=np.float64)
    if args.kv_len:
        x_q = autograd.tensor(rng.standard_normal((B, L, E)), requires_grad=True).named("X_q")
        x_kv = autograd.tensor(rng.standard_normal((B, S, E)), requires_grad=True).named("X_kv")
        inputs, (query, key, value) = {"X_q": x_q, "X_kv": x_kv}, (x_q, x_kv, x_kv)
    else:
        x = autograd.tensor(rng.standard_normal((B, L, E)), requires_grad=True).named("X")
        inputs, (query, key, value) = {"X": x}, (x, x, x)
    kwargs = masks(args)
    with trace() as steps, key_blocks(FUSED_KEY_BLOCK):
        # need_weights=True: the composed path, one op per step; False: FlashAttention, one fused step
        out, _ = mha(query, key, value, need_weights=not args.fused, **kwargs)
        out.backward(rng.standard_normal(out.shape))  # R = dL/d attn_output
    return mha, inputs, steps


def landing_table(mha: nn.MultiheadAttention, inputs: dict[str, autograd.Tensor], steps: Trace) -> list[str]:
    """Where each gradient ends up, checked against the ``.grad`` tensors backward() filled."""
    E = mha.embed_dim
    rows = []

    def row(label: str, traced: np.ndarray, grad: autograd.Tensor | None, where: str) -> None:
        stored = None if grad is None else grad.numpy()
        same = stored is not None and traced.shape == stored.shape and bool(
            np.allclose(traced, stored, rtol=1e-12, atol=1e-12))
        rows.append(f"  {label:<8} {str(traced.shape):<12} = {where:<30} {'✓ matches' if same else '✗ DIFFERS'}")

    row("dL/dW^O", steps.gradient_of("W^O"), mha.out_proj.weight.grad, "out_proj.weight.grad")
    in_grad = mha.in_proj_weight.grad
    packed = not any(g.name == "W^Q" for step in steps for g in step.grads)  # one product for Q, K and V
    for i, name in enumerate(["W^Q", "W^K", "W^V"]):
        rows_slice = f"in_proj_weight.grad[{i * E}:{(i + 1) * E}]"
        stored = None if in_grad is None else in_grad[i * E : (i + 1) * E]
        traced = steps.gradient_of("in_proj_weight")[i * E : (i + 1) * E] if packed else steps.gradient_of(name)
        row(f"dL/d{name}", traced, stored, rows_slice)
    for name, t in inputs.items():
        row(f"dL/d{name}", steps.gradient_of(name), t.grad, f"{name}.grad (sum over its uses)")
    return rows


def walkthrough(args: argparse.Namespace, built: Built | None = None) -> str:
    """The full text the command prints (of ``built``, if that pass was already run)."""
    mha, inputs, steps = built if built is not None else build(args)
    B, L, E, h = args.batch, args.seq, args.d_model, args.heads
    S = args.kv_len or L
    kind = f"cross-attention, keys/values of length {S}" if args.kv_len else "self-attention"
    mask = {"none": "no mask", "causal": "causal attn_mask", "padding": "key_padding_mask (last key)"}[args.mask]
    x_names = " and ".join(inputs)
    lines = [
        f"Gradient flow through MultiheadAttention: B={B}, n={L}, d_model={E}, h={h}, d_k={E // h}; {kind}; {mask}",
        "",
        f"Forward: {x_names} -> attn_output {(B, L, E)}. Backward starts from L = sum(attn_output ⊙ R), R random,",
        f"so dL/d attn_output = R {(B, L, E)}. Each step below is one op's backward: the op and its forward",
        "equation, the gradient that arrives (its shape and norm), then each gradient it sends on, with the",
        "formula that produces it. Names follow the chapter; t1, t2, ... are unnamed intermediates, shown with",
        "their shapes (reshapes and transposes that split and merge the heads). dZ is dL/dZ, with the shape of Z;",
        "(K_h)ᵀ is the transpose of K_h and d(K_h)ᵀ its gradient. A name reached twice (X in self-attention) gets",
        "the sum of its contributions.",
        "",
    ]
    if args.fused:
        blocks = -(-S // FUSED_KEY_BLOCK)
        how = (f"the {S} keys come in {blocks} blocks of up to {FUSED_KEY_BLOCK}" if blocks > 1 else
               f"the {S} keys fit in one block, whose P the backward recomputes all the same")
        lines[2:2] = [
            "Attention is one FlashAttention step here (need_weights=False): its forward walks the keys in blocks",
            "with an online softmax and keeps only the output and each row's log-sum-exp; its backward recomputes",
            "each block's P_j = exp(S_j − LSE) instead of storing P (see autograd/core/ops/flash_attention.py). Here",
            f"{how} (the library's default block is 128 keys, so at this size it would keep P).",
            *([] if args.kv_len else [
                "In self-attention Q, K and V also come from one product, as torch computes them on this path:",
                "QKV = X in_proj_weightᵀ + in_proj_bias (in_proj_weight holds W^Q, W^K, W^V as its rows), cut into",
                "heads by a view and a permute: QKV_h is Q_h, K_h and V_h stacked, and PackedFlashAttention is",
                "FlashAttention on them (its gradient dQKV_h is dQ_h, dK_h and dV_h stacked).",
            ]),
            "",
        ]
    if args.cost:
        from .cost import cost_table

        lines += [
            "The cost of each step (FLOPs: a multiply-add is 2, other arithmetic 1 per element, moving data 0;",
            "saved: the bytes an op keeps for its backward, an array kept by several ops counted once in the total):",
            "",
            cost_table(steps, (L, S)),
        ]
    elif args.table:
        lines.append(steps.table())
    else:
        lines.append(str(steps))
    lines += ["", "Where the gradients land (checked against the .grad tensors filled by backward):"]
    lines += landing_table(mha, inputs, steps)
    if args.graph:
        from .graph import draw_graph

        draw_graph(steps, args.graph, groups=MHA_GROUPS, title=f"MultiheadAttention backward ({kind}, {mask})")
        lines.append(f"\nGraph picture written to {args.graph}")
    if args.html:
        from .notebook import from_build

        from_build(args, (mha, inputs, steps)).html(args.html)
        lines.append(f"\nInteractive page written to {args.html}")
    if args.dot:
        from .graph import to_dot

        with open(args.dot, "w", encoding="utf-8") as f:
            f.write(to_dot(steps, groups=MHA_GROUPS))
        lines.append(f"DOT graph written to {args.dot}")
    return "\n".join(lines)


def docs_block() -> str:
    """The generated part of docs/gradients.md: the chapter-size table (shapes, no norms) and the sources."""
    args = parser().parse_args([])
    _, _, steps = build(args)
    lines = ["```text", steps.table(norms=False), "```", "", "Each backward used above lives at:", ""]
    lines += [f"- `{source}`" for source in steps.sources()]
    return "\n".join(lines)


def _positive(text: str) -> int:
    """An argparse type: a whole number ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _writable(path: str) -> str:
    """An argparse type: a file path whose folder exists."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"folder {folder} does not exist")
    return path


def _picture(path: str) -> str:
    """An argparse type: a .png, .svg or .pdf path whose folder exists."""
    if os.path.splitext(path)[1].lower() not in (".png", ".svg", ".pdf"):
        raise argparse.ArgumentTypeError(f"expected a .png, .svg or .pdf file name, got {path!r}")
    return _writable(path)


def parser() -> argparse.ArgumentParser:
    """The command-line options."""
    p = argparse.ArgumentParser(prog="python -m tinyattn.explain", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"tinyattn {__version__}")
    p.add_argument("--batch", type=_positive, default=3, help="B (default 3)")
    p.add_argument("--seq", type=_positive, default=5, help="n, the query length (default 5)")
    p.add_argument("--d-model", type=_positive, default=16, help="d_model = embed_dim (default 16)")
    p.add_argument("--heads", type=_positive, default=2, help="h, the number of heads (default 2)")
    p.add_argument("--kv-len", type=_positive, default=None,
                   help="cross-attention with keys/values of this length (default: self-attention)")
    p.add_argument("--mask", choices=["none", "causal", "padding"], default="none")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--table", action="store_true", help="one line per gradient instead of the walkthrough")
    p.add_argument("--cost", action="store_true",
                   help="the cost view: FLOPs of each step forward and backward, bytes saved, what grows as n²")
    p.add_argument(
        "--fused", action="store_true",
        help="attention as one FlashAttention step (what need_weights=False runs) instead of its composed ops",
    )
    p.add_argument("--graph", metavar="PATH", type=_picture, help="save a picture of the graph (.png, .svg or .pdf)")
    p.add_argument("--dot", metavar="PATH", type=_writable, help="save the graph as Graphviz DOT")
    p.add_argument("--html", metavar="PATH", type=_writable,
                   help="save the interactive walkthrough: one self-contained HTML page")
    p.add_argument("--docs-block", action="store_true", help="print the generated part of docs/gradients.md")
    p.add_argument("--scale", action="store_true",
                   help="why attention divides by √d_k: the argument, and the logits, the softmax and its gradient "
                        "measured with and without the scale")
    return p


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``python -m tinyattn.explain`` and ``tinyattn-explain``."""
    args = parser().parse_args(argv)
    if args.d_model % args.heads:
        parser().error(f"--d-model ({args.d_model}) must be divisible by --heads ({args.heads})")
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")  # the formulas use ⊙, ᵀ, Σ
    if args.scale:
        from .scale import scale_walkthrough

        print(scale_walkthrough())
        return
    print(docs_block() if args.docs_block else walkthrough(args))


if __name__ == "__main__":
    main()
