"""Time MultiheadAttention forward + backward, both paths, against a hand-fused NumPy floor (and torch).

    python benchmarks/bench_mha.py [--quick] [--calls N] [--against REF] [--plot figures/bench_mha.png]

Setting: float32, batch_first self-attention, a random upstream gradient, all
parameter and input gradients computed. tinyattn runs two ways: **composed**
(``need_weights=True``: one op per step, P stored, as the chapter and the
explainer read it) and **fused** (``need_weights=False``: FlashAttention, P never
stored). Every implementation is timed interleaved, round after round (in a new
order each round, so none always runs right after torch's call), in one process
pinned to one CPU with BLAS (and torch) on one thread, so a noisy machine slows
them alike; the table reports median times and their ratios to the floor.
A sample is one call after a short pause; with ``--calls N`` it is the mean of N calls run
back to back, the steady cost a training loop pays. At the chapter's size a lone call also
pays for waking the CPU and refilling its caches: there the floor's single call takes
several times its back-to-back time, so the ratios of the two regimes differ.
``--against REF`` (a commit of this repository, or another checkout's path) adds that version's
two paths to the same rounds, on the same weights and inputs, and prints each path's time new/old.
In one process that ratio also carries where each version's objects happen to lie in memory
(this checkout is always imported first): for a lone call at the chapter's size, two copies
of the same code read 0.97 to 1.03 of each other. ``compare_commits.py --layouts N`` averages that
placement out over N processes.
Peak traced memory (tracemalloc; NumPy reports its buffers to it, torch does not)
is measured in a separate pass. ``--plot`` draws time and memory against n.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc

import numpy as np

import tinyattn as ta
from tinyattn import nn

# torch's OpenMP threads keep spinning for a moment after each call; a short pause between
# timed calls (outside the timing) keeps them from stealing the cores of the next run.
PAUSE = 0.003

SIZES = [(3, 5, 16, 2), (8, 64, 128, 8), (16, 128, 256, 8), (4, 512, 256, 8), (1, 2048, 256, 8)]  # (B, n, E, h)
PLOT_NS = [64, 128, 256, 512, 1024, 2048, 4096]  # with B = 1, E = 256, h = 8


def floor_fwd_bwd(x, w_in, b_in, w_out, b_out, h, dy):
    """MHA forward and backward written out by hand in NumPy, fused where it helps (one in-projection)."""
    B, n, E = x.shape
    d = E // h
    scale = np.float32(1 / math.sqrt(d))
    qkv = x @ w_in.T + b_in  # (B, n, 3E)
    q, k, v = (qkv[..., i * E : (i + 1) * E].reshape(B, n, h, d).transpose(0, 2, 1, 3) for i in range(3))
    s = (q @ k.transpose(0, 1, 3, 2)) * scale  # (B, h, n, n)
    s -= s.max(-1, keepdims=True)
    p = np.exp(s, out=s)
    p /= p.sum(-1, keepdims=True)
    o = p @ v  # (B, h, n, d)
    concat = o.transpose(0, 2, 1, 3).reshape(B, n, E)
    y = concat @ w_out.T + b_out
    # backward
    dw_out = dy.reshape(-1, E).T @ concat.reshape(-1, E)
    db_out = dy.sum((0, 1))
    do = (dy @ w_out).reshape(B, n, h, d).transpose(0, 2, 1, 3)  # (B, h, n, d)
    dp = do @ v.transpose(0, 1, 3, 2)  # (B, h, n, n)
    dv = p.transpose(0, 1, 3, 2) @ do
    ds = dp
    ds -= (dp * p).sum(-1, keepdims=True)
    ds *= p
    ds *= scale
    dq = ds @ k
    dk = ds.transpose(0, 1, 3, 2) @ q
    dqkv = np.concatenate([t.transpose(0, 2, 1, 3).reshape(B, n, E) for t in (dq, dk, dv)], axis=-1)
    dw_in = dqkv.reshape(-1, 3 * E).T @ x.reshape(-1, E)
    db_in = dqkv.sum((0, 1))
    dx = dqkv @ w_in
    return y, dx, dw_in, db_in, dw_out, db_out


def as_numpy(value):
    """An array, or a tensor (this version's, or an older one) as its array."""
    return value if isinstance(value, np.ndarray) else value.detach().numpy()


def make_runners(B, n, E, h, seed=0, with_torch=True, torch_threads=None, other=None):
    """name -> a function running one forward + backward and returning (output, dX, dW_in).

    ``other``: another version of the package (``--against``), whose two paths join as
    ``"composed, old"`` and ``"fused, old"``, on the same weights.
    """
    rng = np.random.default_rng(seed)
    x_np = rng.standard_normal((B, n, E)).astype(np.float32)
    dy_np = rng.standard_normal((B, n, E)).astype(np.float32)
    ta.manual_seed(seed)
    mha = nn.MultiheadAttention(E, h, batch_first=True)
    with ta.no_grad():
        mha.in_proj_bias.copy_(ta.tensor(rng.standard_normal(3 * E).astype(np.float32)))
    w_in, b_in = mha.in_proj_weight.detach().numpy(), mha.in_proj_bias.detach().numpy()
    w_out, b_out = mha.out_proj.weight.detach().numpy(), mha.out_proj.bias.detach().numpy()

    def tinyattn_path(lib, mha, need_weights):
        def run():
            mha.zero_grad()
            x = lib.tensor(x_np, requires_grad=True)
            y, _ = mha(x, x, x, need_weights=need_weights)
            y.backward(dy_np)
            return y, x.grad, mha.in_proj_weight.grad  # (as_numpy makes arrays of them, outside the timing)

        return run

    def run_floor():
        y, dx, dw_in, *_ = floor_fwd_bwd(x_np, w_in, b_in, w_out, b_out, h, dy_np)
        return y, dx, dw_in

    runners = {"composed": tinyattn_path(ta, mha, True), "fused": tinyattn_path(ta, mha, False), "floor": run_floor}
    if other is not None:
        old = importlib.import_module(other.__name__ + ".nn").MultiheadAttention(E, h, batch_first=True)
        new = dict(mha.named_parameters())
        for name, p in old.named_parameters():
            p.data[...] = new[name].detach().numpy()  # (p.data: an array in older versions, a tensor now: in place)
        runners["composed, old"] = tinyattn_path(other, old, True)
        runners["fused, old"] = tinyattn_path(other, old, False)
    if not with_torch:
        return runners
    try:
        import torch
    except ImportError:
        return runners
    if torch_threads:
        torch.set_num_threads(torch_threads)
    tm = torch.nn.MultiheadAttention(E, h, batch_first=True)
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mha.state_dict().items()})
    dy_t = torch.tensor(dy_np)

    def run_torch():
        tm.zero_grad()
        x = torch.tensor(x_np, requires_grad=True)
        y, _ = tm(x, x, x, need_weights=False)
        y.backward(dy_t)
        return y.detach().numpy(), x.grad.numpy(), tm.in_proj_weight.grad.numpy()

    runners["torch"] = run_torch
    return runners


def peak_memory(fn):
    """Peak bytes traced while ``fn`` runs (NumPy's buffers included; torch's are not traced)."""
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def bench(B, n, E, h, budget, with_torch, torch_threads, min_rounds=7, calls=1, other=None):
    """Median seconds per call of each runner (interleaved rounds; a sample is the mean of ``calls`` calls run
    back to back), peak traced bytes per NumPy runner, rounds run."""
    runners = make_runners(B, n, E, h, with_torch=with_torch, torch_threads=torch_threads, other=other)
    ref = runners["floor"]()  # every implementation computes the same thing
    for name, fn in runners.items():
        for a, b in zip(fn(), ref):
            np.testing.assert_allclose(as_numpy(a), b, rtol=2e-3, atol=2e-3, err_msg=name)
    times = {name: [] for name in runners}
    start = time.perf_counter()
    rounds = 0
    order, shuffle = list(runners.items()), random.Random(0).shuffle
    while rounds < min_rounds or (time.perf_counter() - start < budget and rounds < 1000):
        shuffle(order)  # a new order each round: no runner always runs right after torch's call, which slows it
        for name, fn in order:
            time.sleep(PAUSE)
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter() - t0) / calls)
        rounds += 1
    med = {name: statistics.median(ts) for name, ts in times.items()}
    mem = {name: peak_memory(runners[name]) for name in ("floor", "composed", "fused")}
    return med, mem, rounds


def pin(torch_threads):
    """One CPU for the process, one thread for BLAS (and torch): the setting every number here is measured in."""
    notes = []
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        notes.append(f"pinned to CPU {cpu}")
    try:
        from threadpoolctl import threadpool_info, threadpool_limits

        threadpool_limits(1)
        pools = ", ".join(f"{p['internal_api']} {p['num_threads']} thread" for p in threadpool_info())
        notes.append(f"BLAS: {pools}")
    except ImportError:
        notes.append("threadpoolctl not installed: set OMP_NUM_THREADS=1 yourself")
    try:
        import torch

        torch.set_num_threads(torch_threads or 1)
        notes.append(f"torch {torch.__version__}: {torch.get_num_threads()} thread")
    except ImportError:
        pass
    return "; ".join(notes)


def table(sizes, budget, with_torch, torch_threads, calls=1, other=None, other_label=""):
    """Print the times, the ratios to the floor and the peak memory of each path (and each against ``other``)."""
    print(f"{'(B, n, E, h)':>18} | {'floor':>9} | {'composed':>9} | {'fused':>9} | {'torch':>9} | "
          f"{'comp/fl':>7} | {'fused/fl':>8} | {'torch/fl':>8} | "
          f"{'MiB floor':>9} | {'comp':>7} | {'fused':>7} | rounds")
    print("-" * 138)
    for B, n, E, h in sizes:
        med, mem, rounds = bench(B, n, E, h, budget, with_torch, torch_threads, calls=calls, other=other)
        fl = med["floor"]
        t_to = med.get("torch")
        to, to_ratio = (f"{t_to * 1e3:7.2f}ms", f"{t_to / fl:8.2f}") if t_to else (f"{'-':>9}", f"{'-':>8}")
        mib = {k: v / 2**20 for k, v in mem.items()}
        print(f"{str((B, n, E, h)):>18} | {fl * 1e3:7.2f}ms | {med['composed'] * 1e3:7.2f}ms | "
              f"{med['fused'] * 1e3:7.2f}ms | {to} | {med['composed'] / fl:7.2f} | {med['fused'] / fl:8.2f} | "
              f"{to_ratio} | {mib['floor']:9.2f} | {mib['composed']:7.2f} | {mib['fused']:7.2f} | {rounds}")
        if other is not None:
            print(f"{'':>18}   against {other_label}: " + "; ".join(
                f"{path} {med[path + ', old'] * 1e3:.2f}ms ({med[path + ', old'] / fl:.2f}x the floor), "
                f"new/old = {med[path] / med[path + ', old']:.2f}" for path in ("composed", "fused")))


def plot(path, with_torch, torch_threads):
    """Time and peak memory against n (B = 1, E = 256, h = 8): O(n²) against O(n)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    for n in PLOT_NS:
        med, mem, _ = bench(1, n, 256, 8, budget=0.0, with_torch=with_torch, torch_threads=torch_threads,
                            min_rounds=3)
        rows.append((n, med, mem))
        print(f"n={n}: " + ", ".join(f"{k} {v * 1e3:.1f}ms" for k, v in med.items()))
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, style in [("composed", "o-"), ("fused", "s-"), ("floor", "^--"), ("torch", "x:")]:
        if name in rows[0][1]:
            ax_t.plot(PLOT_NS, [r[1][name] * 1e3 for r in rows], style, label=name)
        if name in rows[0][2]:
            ax_m.plot(PLOT_NS, [r[2][name] / 2**20 for r in rows], style, label=name)
    for ax, what in [(ax_t, "median time of forward + backward (ms)"), (ax_m, "peak traced memory (MiB)")]:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length n  (B = 1, d_model = 256, h = 8, float32)")
        ax.set_ylabel(what)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    ax_m.set_title("composed and floor store P: O(n²); fused: O(n)", fontsize=10)
    ax_t.set_title("one thread, one CPU", fontsize=10)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    print(f"wrote {path}")


def main() -> None:
    """Parse the options, pin the process, print the table (and draw the plot)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short time budget per size")
    parser.add_argument("--no-torch", action="store_true", help="leave torch out even if it is installed")
    parser.add_argument("--torch-threads", type=int, default=1, help="torch.set_num_threads(N) (default 1)")
    parser.add_argument("--calls", type=int, default=1,
                        help="each sample is the mean of N calls run back to back (default 1: one call after a pause)")
    parser.add_argument("--against", metavar="REF",
                        help="also time the paths of a commit (or another checkout) in the same rounds: new/old")
    parser.add_argument("--plot", metavar="PATH", help="also draw time and memory against n (64 ... 4096)")
    parser.add_argument("--sizes", help="only these sizes, e.g. '4,512,256,8;1,2048,256,8'")
    args = parser.parse_args()
    if args.calls < 1:
        parser.error(f"--calls must be at least 1, got {args.calls}")
    with_torch = not args.no_torch
    sample = "one call after a pause" if args.calls == 1 else f"the mean of {args.calls} back-to-back calls"
    print(f"numpy {np.__version__}; {pin(args.torch_threads)}")
    print(f"float32, batch_first self-attention; median forward+backward times (a sample: {sample}); "
          "composed = need_weights=True, fused = need_weights=False (FlashAttention)\n")
    sizes = [tuple(int(v) for v in s.split(",")) for s in args.sizes.split(";")] if args.sizes else SIZES
    with tempfile.TemporaryDirectory() as tmp:
        other = None
        if args.against:
            from compare_commits import other_package  # (this folder is the script's, first on sys.path)

            other_package(args.against, tmp)  # copied in as tinyattn_other: both versions in one process
            sys.path.insert(0, tmp)
            other = importlib.import_module("tinyattn_other")
        table(sizes, 0.5 if args.quick else 4.0, with_torch, args.torch_threads, args.calls, other, args.against)
    if args.plot:
        plot(args.plot, with_torch, args.torch_threads)


if __name__ == "__main__":
    main()
