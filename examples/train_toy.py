"""Train a small attention model to reverse a sequence of digits, then draw what its heads learned.

    python examples/train_toy.py [--steps 1500] [--seed 0] [--task reverse] [--out figures] [--quiet]
    python examples/train_toy.py --steps 500 --save run.pt      # stop at step 500, keeping everything
    python examples/train_toy.py --steps 1500 --resume run.pt   # ... and go on to step 1500
    python examples/train_toy.py --help     # every option, with its default

The model is one attention block: token embedding + sinusoidal positional
encoding -> multi-head self-attention -> residual + LayerNorm -> a linear head
predicting one digit per position. Output position i must copy input position
n-1-i (reverse) or (i + shift) mod n (rotate): a job only attention can do, since
nothing else in the model moves information between positions. Training and
held-out sequences are drawn from the seed and never overlap.

Writes to --out: training_curve.png (loss and accuracy per step) and
attention_heads.png (each head's weights on one held-out example).

A checkpoint (``--save``, in torch's file format) holds the model's and the optimizer's state
dicts, the step, the batch generator's state and the curve so far: a run resumed from it takes
the same batches and reaches the same final loss as one that never stopped.
"""

from __future__ import annotations

import argparse
import os
import time

import matplotlib.pyplot as plt  # the backend is matplotlib's choice (Agg without a display, inline in Jupyter)
import numpy as np

import tinyattn as ta
from tinyattn import nn, optim
from tinyattn.nn import functional as F

VOCAB = 10  # digits 0..9
TRAIN, HELD_OUT = 20_000, 1_000  # distinct sequences drawn for training and for the held-out set


def make_data(task: str, n: int, count: int, rng: np.random.Generator, exclude: set[bytes] = frozenset()):
    """``count`` distinct random digit sequences ``(count, n)`` not in ``exclude``, and their targets."""
    seen, rows = set(exclude), []
    while len(rows) < count:
        for row in rng.integers(0, VOCAB, size=(count, n)):
            key = row.tobytes()
            if key not in seen and len(rows) < count:
                seen.add(key)
                rows.append(row)
    x = np.stack(rows)
    if task == "reverse":
        y = x[:, ::-1].copy()
    elif task == "rotate":
        y = np.roll(x, -3, axis=1)  # output i = input (i + 3) mod n
    else:
        raise ValueError(f"unknown task {task!r}")
    return x, y


class AttentionModel(nn.Module):
    """Embedding + positional encoding -> MultiheadAttention -> residual + LayerNorm -> linear head."""

    def __init__(self, d_model: int, num_heads: int, max_len: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d_model)
        self.pos = nn.PositionalEncoding(d_model, max_len)
        self.attn = nn.MultiheadAttention(d_model, num_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, VOCAB)

    def forward(self, ids: np.ndarray) -> tuple[ta.Tensor, ta.Tensor]:
        x = self.pos(self.embed(ids))  # (B, n, d_model)
        a, weights = self.attn(x, x, x, average_attn_weights=False)  # (B, n, d_model), (B, h, n, n)
        x = self.norm(x + a)  # residual + LayerNorm
        return self.head(x), weights  # logits (B, n, 10)


def accuracy(model: AttentionModel, x: np.ndarray, y: np.ndarray) -> float:
    with ta.no_grad():
        logits, _ = model(x)
    return (logits.argmax(-1) == ta.tensor(y)).float().mean().item()


def plot_curve(history: list[tuple[int, float, float]], path: str) -> None:
    steps, losses, accs = zip(*history)
    fig, ax1 = plt.subplots(figsize=(6, 3.5))
    ax1.plot(steps, losses, color="tab:blue", marker="." if len(steps) < 3 else None)
    ax1.set_xlabel("step")
    ax1.set_ylabel("training loss", color="tab:blue")
    ax1.set_yscale("log")
    ax2 = ax1.twinx()
    ax2.plot(steps, accs, color="tab:orange", marker="." if len(steps) < 3 else None)
    ax2.set_ylabel("held-out token accuracy", color="tab:orange")
    ax2.set_ylim(0, 1.02)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_heads(weights: np.ndarray, tokens: np.ndarray, target: np.ndarray, path: str) -> None:
    """weights (h, n, n) for one example: query (output position) down, key (input position) across."""
    h, n = weights.shape[0], weights.shape[-1]
    fig, axes = plt.subplots(1, h, figsize=(3.4 * h, 3.4), squeeze=False)
    for i, ax in enumerate(axes[0]):
        im = ax.imshow(weights[i], cmap="Blues", vmin=0, vmax=1)
        ax.set_xticks(range(n), [str(t) for t in tokens])
        ax.set_yticks(range(n), [str(t) for t in target])
        ax.set_xlabel("key: input digit")
        if i == 0:
            ax.set_ylabel("query: output digit to produce")
        ax.set_title(f"head {i + 1}")
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options, each checked: a bad value stops with one line naming it."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=1500, help="training steps (0: only evaluate and draw)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, the weights and the batches")
    parser.add_argument("--task", choices=["reverse", "rotate"], default="reverse",
                        help="output i copies input n-1-i (reverse) or (i + 3) mod n (rotate)")
    parser.add_argument("--out", default="figures", help="folder for the two figures")
    parser.add_argument("--quiet", action="store_true", help="print only the final line")
    parser.add_argument("--length", type=int, default=8, help="sequence length n (at least 5)")
    parser.add_argument("--batch-size", type=int, default=64, help="sequences per step")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate")
    parser.add_argument("--save", metavar="PATH", help="write a checkpoint here at the end (tinyattn.save)")
    parser.add_argument("--resume", metavar="PATH", help="continue from a checkpoint written by --save")
    args = parser.parse_args(argv)
    needed = TRAIN + HELD_OUT
    if args.length < 1 or VOCAB**args.length < needed:
        parser.error(f"--length: needs n >= 5 to draw {needed:,} distinct sequences of digits; got {args.length}")
    if args.steps < 0:
        parser.error(f"--steps: must be 0 or more, got {args.steps}")
    if args.batch_size < 1:
        parser.error(f"--batch-size: must be at least 1, got {args.batch_size}")
    if not args.lr > 0:
        parser.error(f"--lr: must be positive, got {args.lr}")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        parser.error(f"--out: {args.out} is a file, not a folder")
    if args.resume and not os.path.isfile(args.resume):
        parser.error(f"--resume: no checkpoint at {args.resume}")
    return args


RUN_OPTIONS = ("seed", "task", "length", "batch_size", "lr")  # what a resumed run must share with the saved one


def resume(path: str, args: argparse.Namespace, model: nn.Module, opt: optim.Optimizer,
           rng: np.random.Generator) -> tuple[int, list]:
    """Load a --save checkpoint into the model, the optimizer and the batch generator: (step, history)."""
    checkpoint = ta.load(path)
    saved = checkpoint["options"]
    different = [f"--{k.replace('_', '-')} {saved[k]} (now {getattr(args, k)})" for k in RUN_OPTIONS
                 if saved[k] != getattr(args, k)]
    if different:
        raise SystemExit(f"--resume: {path} was saved by a run with " + ", ".join(different))
    if checkpoint["step"] > args.steps:
        raise SystemExit(f"--resume: {path} is at step {checkpoint['step']}, past --steps {args.steps}")
    model.load_state_dict(checkpoint["model"])
    opt.load_state_dict(checkpoint["optimizer"])
    rng.bit_generator.state = checkpoint["rng"]
    return checkpoint["step"], [tuple(row) for row in checkpoint["history"]]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    ta.manual_seed(args.seed)
    n = args.length
    x_test, y_test = make_data(args.task, n, HELD_OUT, rng)
    held_out = {row.tobytes() for row in x_test}
    x_train, y_train = make_data(args.task, n, TRAIN, rng, exclude=held_out)

    model = AttentionModel(d_model=32, num_heads=2, max_len=n)
    opt = optim.Adam(model.parameters(), lr=args.lr)
    with ta.no_grad():  # step 0: the untrained model
        logits, _ = model(x_train[: args.batch_size])
        loss_value = F.cross_entropy(logits.reshape(-1, VOCAB), y_train[: args.batch_size].reshape(-1)).item()
    history = [(0, loss_value, accuracy(model, x_test, y_test))]
    first = 0
    if args.resume:
        first, history = resume(args.resume, args, model, opt, rng)
        loss_value = history[-1][1]
        if not args.quiet:
            print(f"resumed from {args.resume} at step {first}", flush=True)
    record_every, print_every = max(args.steps // 50, 1), max(args.steps // 10, 1)
    tick, tick_step = time.perf_counter(), first
    for step in range(first + 1, args.steps + 1):
        batch = rng.integers(0, len(x_train), size=args.batch_size)
        logits, _ = model(x_train[batch])  # (B, n, 10)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y_train[batch].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_value = loss.item()
        if step % record_every == 0 or step == args.steps:
            acc = accuracy(model, x_test, y_test)
            history.append((step, loss_value, acc))
            if not args.quiet and (step % print_every == 0 or step == args.steps):
                rate = (step - tick_step) / (time.perf_counter() - tick)
                print(f"step {step}/{args.steps} | loss {loss_value:.3f} | acc {acc:.3f} | {rate:.0f} it/s", flush=True)
            tick, tick_step = time.perf_counter(), step

    final_acc = accuracy(model, x_test, y_test)
    if args.save:
        options = {k: getattr(args, k) for k in RUN_OPTIONS}
        ta.save({"step": args.steps, "model": model.state_dict(), "optimizer": opt.state_dict(),
                 "rng": rng.bit_generator.state, "history": history, "options": options}, args.save)
        if not args.quiet:
            print(f"checkpoint: {args.save} (step {args.steps})")
    elapsed = time.perf_counter() - start
    os.makedirs(args.out, exist_ok=True)
    plot_curve(history, os.path.join(args.out, "training_curve.png"))
    with ta.no_grad():
        _, weights = model(x_test[:1])
    plot_heads(weights.numpy()[0], x_test[0], y_test[0], os.path.join(args.out, "attention_heads.png"))
    if not args.quiet:
        print(f"figures: {args.out}/training_curve.png, {args.out}/attention_heads.png")
    print(f"final: loss={loss_value:.4f} accuracy={final_acc:.4f} time={elapsed:.1f}s")


if __name__ == "__main__":
    main()
