"""Per-sample gradients with ``func.vmap(func.grad(...))``: what vmap's loop costs, against a hand loop and torch.

    python benchmarks/bench_vmap.py                      # batches 8, 64; median of 7 rounds
    python benchmarks/bench_vmap.py --batches 4,32,128 --rounds 9

The model is a MultiheadAttention layer (E = 32, 4 heads, n = 8 tokens) with a linear read-out, float32; the
loss of one sample is the squared error of its read-out. Each round runs, in a new order:

- ``vmap``: ``vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)``, every parameter's gradient per sample;
- ``loop``: the same gradients by calling ``grad(loss)`` on each sample and stacking them by hand;
- ``batched``: one backward of the batch's summed loss (the summed gradient only, not one per sample);
- ``torch vmap`` (when torch is installed): torch's ``vmap(grad(...))`` on the same weights, which batches
  each op instead of looping.

It prints the median seconds of each and the ratios vmap/loop, vmap/batched and vmap/torch, pinned to one CPU
with BLAS (and torch) on one thread, as ``bench_mha.py`` measures.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
E, HEADS, N = 32, 4, 8


def runners(lib, func, batch: int, seed: int = 0) -> dict:
    """The three ways (vmap, loop, batched) on one library, each returning the gradient of ``out_proj.weight``."""
    rng = np.random.default_rng(seed)
    lib.manual_seed(seed)
    attn = lib.nn.MultiheadAttention(E, HEADS, batch_first=True)
    head = lib.nn.Linear(E, 1)
    modules = {"attn": attn, "head": head}
    params = {f"{m}.{k}": v.detach() for m, mod in modules.items() for k, v in mod.named_parameters()}
    xs = lib.tensor(rng.standard_normal((batch, N, E)).astype(np.float32))
    ys = lib.tensor(rng.standard_normal((batch, 1)).astype(np.float32))

    def forward(p, x):
        attn_p = {k[5:]: v for k, v in p.items() if k.startswith("attn.")}
        head_p = {k[5:]: v for k, v in p.items() if k.startswith("head.")}
        h, _ = func.functional_call(attn, attn_p, (x, x, x), {"need_weights": True})
        return func.functional_call(head, head_p, (h.mean(dim=-2),))

    def loss(p, x, y):
        out = forward(p, x.unsqueeze(0))
        return ((out - y.unsqueeze(0)) ** 2).sum()

    def vmapped():
        return func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)["attn.out_proj.weight"]

    def looped():
        rows = [func.grad(loss)(params, xs[i], ys[i])["attn.out_proj.weight"] for i in range(batch)]
        return lib.stack(rows)

    def batched():
        leaves = {k: v.detach().requires_grad_() for k, v in params.items()}
        total = ((forward(leaves, xs) - ys) ** 2).sum()
        return lib.autograd.grad(total, [leaves["attn.out_proj.weight"]])[0]

    return {"vmap": vmapped, "loop": looped, "batched": batched}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="8,64", help="samples per batch, comma-separated")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds per batch (median taken)")
    parser.add_argument("--no-torch", action="store_true", help="leave torch's vmap out")
    args = parser.parse_args(argv)
    from bench_mha import pin  # (this folder is the script's, first on sys.path)

    print(pin(1))
    warnings.filterwarnings("ignore", message="There is a performance drop")  # torch's note on an op it loops
    sys.path.insert(0, HERE)
    import tinyattn as ta
    from tinyattn import func

    torch = None
    if not args.no_torch:
        try:
            import torch
        except ImportError:
            print("torch not installed: its vmap is left out")
    print(f"MultiheadAttention E={E}, {HEADS} heads, n={N}, linear read-out; median of {args.rounds} rounds")
    header = f"{'batch':>6} {'vmap s':>9} {'loop s':>9} {'batched s':>10} {'vmap/loop':>10} {'vmap/batched':>13}"
    print(header + (f" {'torch vmap s':>13} {'vmap/torch':>11}" if torch else ""))
    for batch in [int(b) for b in args.batches.split(",")]:
        ways = runners(ta, func, batch)
        per_sample = ways["vmap"]().numpy()
        np.testing.assert_allclose(per_sample, ways["loop"]().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(per_sample.sum(0), ways["batched"]().numpy(), rtol=1e-3, atol=1e-4)
        if torch is not None:
            theirs = runners(torch, torch.func, batch)
            ways["torch vmap"] = theirs["vmap"]
        times: dict[str, list[float]] = {name: [] for name in ways}
        order = list(ways.items())
        for _ in range(args.rounds):
            random.Random(len(times["vmap"])).shuffle(order)
            for name, fn in order:
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
        med = {name: statistics.median(ts) for name, ts in times.items()}
        line = (f"{batch:>6} {med['vmap']:>9.4f} {med['loop']:>9.4f} {med['batched']:>10.4f} "
                f"{med['vmap'] / med['loop']:>10.2f} {med['vmap'] / med['batched']:>13.1f}")
        if torch is not None:
            line += f" {med['torch vmap']:>13.4f} {med['vmap'] / med['torch vmap']:>11.1f}"
        print(line)


if __name__ == "__main__":
    main()
