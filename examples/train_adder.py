"""Train a tiny GPT to add two numbers, then generate the sums with a KV cache.

    python examples/train_adder.py [--ndigit 2] [--steps 2000] [--seed 0] [--out figures] [--quiet]
    python examples/train_adder.py --attention composed     # the chapter's softmax(Q Kᵀ/√d_k) V by hand
    python examples/train_adder.py --save run.pt            # a checkpoint at every progress line ...
    python examples/train_adder.py --resume run.pt          # ... to go on from after an interruption
    python examples/train_adder.py --help                   # every option, with its default

A problem "a + b = c" with n-digit a and b is written as 3n + 1 digits: a, b, then the sum's
n + 1 digits **reversed**, so that the model writes the ones digit first and can carry as a
person does. For 23 + 49 = 72 (n = 2): ``2 3 4 9 2 7 0``. The model sees the first 3n digits
and learns to predict each next one; only the sum's digits count in the loss.

The model is a decoder-only transformer ("gpt-nano": 3 layers, 3 heads, width 48): token and
position embeddings, blocks of pre-LayerNorm causal self-attention and an MLP, a final
LayerNorm and an output layer that shares the token embedding's weight. Held-out problems are
never seen in training. The sums are produced by ``generate`` with the KV cache.

Writes to --out: adder_curve.png (loss and held-out exact match) and adder_heads.png (each
head of each layer over one worked sum: which digits each output digit reads).
"""

from __future__ import annotations

import argparse
import math
import os
import time

import matplotlib.pyplot as plt
import numpy as np

import tinyattn as torch
from tinyattn import nn
from tinyattn.nn import functional as F


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position t sees positions 0..t, with an optional KV cache."""

    def __init__(self, d_model: int, n_head: int, attention: str) -> None:
        super().__init__()
        self.n_head, self.head_dim, self.attention = n_head, d_model // n_head, attention
        self.qkv = nn.Linear(d_model, 3 * d_model)  # Q, K and V in one matrix
        self.proj = nn.Linear(d_model, d_model)
        self.last_weights: torch.Tensor | None = None  # (B, h, T, S) of the last call, for the figure

    def forward(self, x: torch.Tensor, cache: dict | None = None) -> torch.Tensor:
        B, T, C = x.shape  # T new positions
        q, k, v = self.qkv(x).split(C, dim=2)  # each (B, T, C)
        q = q.reshape(B, T, self.n_head, self.head_dim).transpose(1, 2)  # (B, h, T, d_k)
        k = k.reshape(B, T, self.n_head, self.head_dim).transpose(1, 2)  # (B, h, T, d_k)
        v = v.reshape(B, T, self.n_head, self.head_dim).transpose(1, 2)  # (B, h, T, d_k)
        if cache is not None:
            if "k" in cache:  # keys and values of the earlier positions, then this call's
                k = torch.cat([cache["k"], k], dim=2)  # (B, h, S, d_k), S = cached + T
                v = torch.cat([cache["v"], v], dim=2)  # (B, h, S, d_k)
            cache["k"], cache["v"] = k, v
        S = k.shape[2]
        # The queries are the last T of S positions: query i sits at position S - T + i and may see
        # keys 0..S - T + i. With T == S that is the usual causal mask; for one new token (T = 1)
        # it sees every cached key, so no mask at all. is_causal=True would align the mask at the
        # top left instead (query 0 sees key 0 only) and hide the cache: wrong whenever T < S.
        allowed = np.tril(np.ones((T, S), dtype=bool), k=S - T)  # (T, S), True = may attend
        if self.attention == "sdpa":
            if T == S:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, h, T, d_k)
            else:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(allowed))
            self.last_weights = None
        else:  # composed: the chapter's softmax(Q Kᵀ / √d_k) V, op by op
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, h, T, S)
            weights = scores.masked_fill(torch.tensor(~allowed), -torch.inf).softmax(dim=-1)  # (B, h, T, S)
            self.last_weights = weights.detach()
            y = weights @ v  # (B, h, T, d_k)
        y = y.transpose(1, 2).reshape(B, T, C)  # heads side by side again: (B, T, C)
        return self.proj(y)


class Block(nn.Module):
    """``x + attn(ln1(x))``, then ``x + mlp(ln2(x))`` (pre-LayerNorm, as GPT-2)."""

    def __init__(self, d_model: int, n_head: int, attention: str) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, attention)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * d_model, d_model))  # GPT-2's GELU

    def forward(self, x: torch.Tensor, cache: dict | None = None) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), cache)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Token + position embeddings, ``n_layer`` blocks, a LayerNorm, and logits through the tied embedding."""

    def __init__(self, vocab_size: int, block_size: int, n_layer: int = 3, n_head: int = 3, d_model: int = 48,
                 attention: str = "sdpa") -> None:
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(block_size, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_head, attention) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying: one matrix reads and writes tokens
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor, caches: list[dict] | None = None) -> torch.Tensor:
        """``idx (B, T)`` -> logits ``(B, T, vocab)``; with ``caches``, ``idx`` continues the cached positions."""
        B, T = idx.shape
        start = caches[0]["k"].shape[2] if caches and "k" in caches[0] else 0  # positions already cached
        if start + T > self.block_size:
            raise ValueError(f"GPT: {start + T} positions exceed block_size {self.block_size}")
        x = self.wte(idx) + self.wpe(torch.arange(start, start + T))  # (B, T, C)
        for i, block in enumerate(self.blocks):
            x = block(x, caches[i] if caches is not None else None)
        return self.lm_head(self.ln_f(x))  # (B, T, vocab)

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 use_cache: bool = True, greedy: bool = False) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Append ``max_new_tokens`` tokens to ``idx (B, T)``; also return each step's last logits ``(B, vocab)``.

        With the cache, the first step feeds the whole prompt and every later step only the token
        just chosen; without it, every step feeds the whole sequence so far. Both give the same logits.
        """
        caches: list[dict] | None = [{} for _ in self.blocks] if use_cache else None
        steps = []
        feed = idx
        for _ in range(max_new_tokens):
            logits = self(feed if use_cache else idx, caches)[:, -1, :] / temperature  # (B, vocab)
            steps.append(logits)
            if top_k is not None:
                kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1)[0][:, -1:]  # (B, 1)
                logits = logits.masked_fill(logits < kth, -torch.inf)
            if greedy:
                token = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
            else:
                token = torch.multinomial(logits.softmax(dim=-1), num_samples=1)  # (B, 1)
            idx = torch.cat([idx, token], dim=1)
            feed = token
        return idx, steps


def encode(a: np.ndarray, b: np.ndarray, ndigit: int) -> np.ndarray:
    """``(N,)`` pairs -> ``(N, 3n + 1)`` digits: a, b, and the sum reversed."""
    def digits(x: np.ndarray, width: int) -> np.ndarray:
        return (x[:, None] // 10 ** np.arange(width - 1, -1, -1)) % 10  # most significant first
    return np.concatenate([digits(a, ndigit), digits(b, ndigit), digits(a + b, ndigit + 1)[:, ::-1]], axis=1)


def split_problems(ndigit: int, rng: np.random.Generator, held_out: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """Every problem, shuffled: ``held_out`` of them for testing only, the rest for training."""
    n = 10**ndigit
    ids = rng.permutation(n * n)  # problem id = a * n + b
    return ids[held_out:], ids[:held_out]


def exact_match(model: GPT, problems: np.ndarray, ndigit: int) -> float:
    """The fraction of problems whose generated sum (greedy, with the cache) is right in every digit."""
    seqs = encode(problems // 10**ndigit, problems % 10**ndigit, ndigit)
    out, _ = model.generate(torch.tensor(seqs[:, : 2 * ndigit]), ndigit + 1, greedy=True)
    return float(np.mean(np.all(out.numpy()[:, 2 * ndigit:] == seqs[:, 2 * ndigit:], axis=1)))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--ndigit", type=int, default=2, help="digits of each number added")
    parser.add_argument("--steps", type=int, default=2000, help="training steps")
    parser.add_argument("--batch-size", type=int, default=64, help="problems per step")
    parser.add_argument("--lr", type=float, default=3e-3, help="AdamW's peak learning rate (OneCycleLR)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split, the weights and the batches")
    parser.add_argument("--attention", choices=["sdpa", "composed"], default="sdpa",
                        help="F.scaled_dot_product_attention (FlashAttention) or the composed ops")
    parser.add_argument("--out", default="figures", help="folder for the two figures")
    parser.add_argument("--quiet", action="store_true", help="print only the final line")
    parser.add_argument("--save", metavar="PATH", help="write a checkpoint (torch's format) at every progress line")
    parser.add_argument("--resume", metavar="PATH", help="go on from a checkpoint written by --save")
    args = parser.parse_args(argv)
    if not 1 <= args.ndigit <= 4:
        parser.error(f"--ndigit: must be 1 to 4, got {args.ndigit}")
    for name in ("steps", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}: must be at least 1, got {getattr(args, name)}")
    if not args.lr > 0:
        parser.error(f"--lr: must be positive, got {args.lr}")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        parser.error(f"--out: {args.out} is a file, not a folder")
    if args.resume and not os.path.isfile(args.resume):
        parser.error(f"--resume: no checkpoint at {args.resume}")
    return args


RUN_OPTIONS = ("ndigit", "steps", "batch_size", "lr", "seed", "attention")  # a resumed run must share these


def plot_curve(history: list[tuple[int, float, float]], path: str) -> None:
    steps, losses, matches = zip(*history)
    fig, ax1 = plt.subplots(figsize=(6, 3.5))
    ax1.plot(steps, losses, color="tab:blue")
    ax1.set_xlabel("step")
    ax1.set_ylabel("training loss", color="tab:blue")
    ax1.set_yscale("log")
    ax2 = ax1.twinx()
    ax2.plot(steps, matches, color="tab:orange", marker=".")
    ax2.set_ylabel("held-out exact match", color="tab:orange")
    ax2.set_ylim(0, 1.02)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_heads(model: GPT, seq: np.ndarray, ndigit: int, path: str) -> None:
    """Each head of each layer over one worked sum (the composed path keeps the weights)."""
    attention = [block.attn.attention for block in model.blocks]
    for block in model.blocks:
        block.attn.attention = "composed"
    with torch.no_grad():
        model(torch.tensor(seq[None, :-1]))
    for block, kind in zip(model.blocks, attention):
        block.attn.attention = kind
    labels = [str(d) for d in seq[:-1]]
    rows = [f"{a}→{b}" for a, b in zip(seq[:-1], seq[1:])]  # each position predicts the next digit
    layers, heads = len(model.blocks), model.blocks[0].attn.n_head
    fig, axes = plt.subplots(layers, heads, figsize=(2.6 * heads, 2.6 * layers), squeeze=False)
    for i, block in enumerate(model.blocks):
        for h in range(heads):
            ax = axes[i][h]
            ax.imshow(block.attn.last_weights.numpy()[0, h], cmap="Blues", vmin=0, vmax=1)
            ax.set_xticks(range(len(labels)), labels)
            ax.set_yticks(range(len(rows)), rows)
            ax.set_title(f"layer {i + 1}, head {h + 1}", fontsize=9)
    a, b = int("".join(labels[:ndigit])), int("".join(labels[ndigit: 2 * ndigit]))
    fig.suptitle(f"{a} + {b} = {a + b} (sum written reversed): each row predicts the next digit (→), "
                 "its columns are the digits it reads", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    n = args.ndigit
    train, test = split_problems(n, rng)
    x_all = encode(train // 10**n, train % 10**n, n)  # (N, 3n + 1)
    inputs, targets = x_all[:, :-1], x_all[:, 1:].copy()  # predict each next digit
    targets[:, : 2 * n - 1] = -100  # only the sum's digits are scored (ignore_index)

    model = GPT(vocab_size=10, block_size=3 * n, attention=args.attention)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1, betas=(0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.steps,
                                                    pct_start=0.1)
    history: list[tuple[int, float, float]] = []
    first = 0
    if args.resume:  # the model, the optimizer, the schedule, the batch generator and the curve, as saved
        checkpoint = torch.load(args.resume)
        different = [f"--{k.replace('_', '-')} {checkpoint['options'][k]} (now {getattr(args, k)})"
                     for k in RUN_OPTIONS if checkpoint["options"][k] != getattr(args, k)]
        if different:
            raise SystemExit(f"--resume: {args.resume} was saved by a run with " + ", ".join(different))
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        rng.bit_generator.state = checkpoint["rng"]
        first, history = checkpoint["step"], [tuple(row) for row in checkpoint["history"]]
        if not args.quiet:
            print(f"resumed from {args.resume} at step {first}", flush=True)
    check_every = max(args.steps // 10, 1)
    for step in range(first + 1, args.steps + 1):
        batch = rng.integers(0, len(inputs), size=args.batch_size)
        logits = model(torch.tensor(inputs[batch]))  # (B, 3n, 10)
        loss = F.cross_entropy(logits.reshape(-1, 10), torch.tensor(targets[batch].reshape(-1)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % check_every == 0 or step == args.steps:
            match = exact_match(model, test, n)
            history.append((step, loss.item(), match))
            if not args.quiet:
                print(f"step {step}/{args.steps} | loss {loss.item():.4f} | exact {match:.3f} | "
                      f"{(step - first) / (time.perf_counter() - start):.0f} it/s", flush=True)
            if args.save:  # written whole, then renamed: an interruption leaves the last one intact
                torch.save({"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict(), "rng": rng.bit_generator.state,
                            "history": history, "options": {k: getattr(args, k) for k in RUN_OPTIONS}}, args.save)
    final = exact_match(model, test, n)
    elapsed = time.perf_counter() - start
    os.makedirs(args.out, exist_ok=True)
    plot_curve(history, os.path.join(args.out, "adder_curve.png"))
    plot_heads(model, encode(test[:1] // 10**n, test[:1] % 10**n, n)[0], n, os.path.join(args.out, "adder_heads.png"))
    if not args.quiet:
        print(f"figures: {args.out}/adder_curve.png, {args.out}/adder_heads.png")
    print(f"final: exact_match={final:.4f} time={elapsed:.1f}s")


if __name__ == "__main__":
    main()
