"""Train the chapter's multi-head attention on the core alone: core tensors, core ops, the core's backward.

    python examples/train_core.py [--steps 400] [--seed 0] [--length 6] [--quiet]

Nothing of tinyattn's torch-like layer runs here: every tensor is a ``tinyattn.autograd.core.Tensor``, the
model is ``core/attention.py``'s ``multi_head_attention`` (the chapter's five steps, each line one op), the
loss is built from the core's operators, ``loss.backward()`` is the core's engine, and the optimizer is the
two lines of plain gradient descent below. The task: output position i must copy input position n-1-i (reverse
a sequence of digits), a job only attention can do, since nothing else moves information between positions.

Each token is fed as a one-hot digit beside a one-hot position (``E = 10 + n``, rounded up to the heads); the
model is the attention layer and a linear head predicting a digit per position.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from tinyattn.autograd import core
from tinyattn.autograd.core import attention

VOCAB = 10


def one_hot(ids: np.ndarray, size: int) -> np.ndarray:
    """``ids (...)`` -> ``(..., size)``: a 1 at each id."""
    return np.eye(size)[ids]


def inputs(tokens: np.ndarray, width: int) -> np.ndarray:
    """``(B, n)`` digits -> ``(B, n, width)``: the one-hot digit, then the one-hot position, then zeros."""
    B, n = tokens.shape
    x = np.zeros((B, n, width))
    x[..., :VOCAB] = one_hot(tokens, VOCAB)
    x[..., VOCAB:VOCAB + n] = one_hot(np.arange(n), n)  # the same positions for every sequence
    return x


class Model:
    """Multi-head self-attention (W^Q, W^K, W^V, W^O and their biases), then a linear head ``E -> 10``."""

    def __init__(self, width: int, heads: int, rng: np.random.Generator) -> None:
        bound = 1 / math.sqrt(width)
        self.heads = heads
        self.weights = [core.Tensor(rng.uniform(-bound, bound, (width, width)), requires_grad=True) for _ in range(4)]
        self.biases = [core.Tensor(np.zeros(width), requires_grad=True) for _ in range(4)]
        self.head_w = core.Tensor(rng.uniform(-bound, bound, (VOCAB, width)), requires_grad=True)
        self.head_b = core.Tensor(np.zeros(VOCAB), requires_grad=True)

    def parameters(self) -> list[core.Tensor]:
        return [*self.weights, *self.biases, self.head_w, self.head_b]

    def __call__(self, x: core.Tensor) -> tuple[core.Tensor, core.Tensor]:
        """Logits ``(B, n, 10)`` and the attention weights ``(B, h, n, n)``."""
        a, p = attention.multi_head_attention(x, x, x, self.heads, self.weights, self.biases)
        return attention.linear(a, self.head_w, self.head_b), p


def cross_entropy(logits: core.Tensor, targets: np.ndarray) -> core.Tensor:
    """The mean of ``-log softmax(logits)[target]`` over every position, from the core's ops."""
    log_p = logits.log_softmax(dim=-1)  # (B, n, 10)
    picked = log_p * one_hot(targets, VOCAB)  # the target's log-probability, zeros elsewhere
    return -picked.sum() / targets.size


def train(steps: int, seed: int, length: int, batch: int = 64, lr: float = 0.5, quiet: bool = False) -> dict:
    """Train from ``seed``; return the last loss and the accuracy on fresh sequences."""
    rng = np.random.default_rng(seed)
    heads = 2
    width = -(-(VOCAB + length) // heads) * heads  # E: room for digit and position, divisible by the heads
    model = Model(width, heads, rng)
    loss = None
    for step in range(1, steps + 1):
        tokens = rng.integers(0, VOCAB, (batch, length))
        logits, _ = model(core.Tensor(inputs(tokens, width)))
        loss = cross_entropy(logits, tokens[:, ::-1])
        for p in model.parameters():
            p.grad = None
        loss.backward()  # the core's engine: core/engine.py
        for p in model.parameters():  # plain gradient descent: w <- w - lr dL/dw
            p.array -= lr * p.grad.array
        if not quiet and (step % 100 == 0 or step == 1):
            print(f"step {step:4d}  loss {loss.array.item():.4f}")
    test = rng.integers(0, VOCAB, (1000, length))
    logits, _ = model(core.Tensor(inputs(test, width)))
    accuracy = float((logits.array.argmax(-1) == test[:, ::-1]).mean())
    return {"loss": float(loss.array) if loss is not None else float("nan"), "accuracy": accuracy}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=400, help="training steps")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the batches")
    parser.add_argument("--length", type=int, default=6, help="sequence length n")
    parser.add_argument("--quiet", action="store_true", help="print only the final line")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps: must be at least 1, got {args.steps}")
    if args.length < 2:
        parser.error(f"--length: must be at least 2, got {args.length}")
    result = train(args.steps, args.seed, args.length, quiet=args.quiet)
    print(f"final loss {result['loss']:.4f}, held-out accuracy {result['accuracy']:.3f}")
    return result


if __name__ == "__main__":
    main()
