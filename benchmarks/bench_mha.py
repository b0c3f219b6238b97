"""Time MultiheadAttention forward + backward against a hand-fused NumPy floor (and torch, if installed).

    python benchmarks/bench_mha.py [--quick]

Setting: float32, batch_first self-attention, need_weights=False, a random
upstream gradient, all parameter and input gradients computed. The three
implementations are timed interleaved, round after round, in one process, so a
noisy machine slows them alike; the table reports median times and their ratios.
Peak traced memory (tracemalloc; NumPy reports its buffers to it, torch does
not) is measured in a separate pass.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import tracemalloc

import numpy as np

import tinyattn as ta
from tinyattn import nn

# torch's OpenMP threads keep spinning for a moment after each call; a short pause between
# timed calls (outside the timing) keeps them from stealing the cores of the next run.
PAUSE = 0.003

SIZES = [(3, 5, 16, 2), (8, 64, 128, 8), (16, 128, 256, 8), (4, 512, 256, 8)]  # (B, n, E, h)


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


def make_runners(B, n, E, h, seed=0, with_torch=True, torch_threads=None):
    rng = np.random.default_rng(seed)
    x_np = rng.standard_normal((B, n, E)).astype(np.float32)
    dy_np = rng.standard_normal((B, n, E)).astype(np.float32)
    ta.manual_seed(seed)
    mha = nn.MultiheadAttention(E, h, batch_first=True)
    mha.in_proj_bias.data[...] = rng.standard_normal(3 * E).astype(np.float32)
    w_in, b_in = mha.in_proj_weight.data, mha.in_proj_bias.data
    w_out, b_out = mha.out_proj.weight.data, mha.out_proj.bias.data

    def run_tinyattn():
        mha.zero_grad()
        x = ta.tensor(x_np, requires_grad=True)
        y, _ = mha(x, x, x, need_weights=False)
        y.backward(dy_np)
        return y.data, x.grad, mha.in_proj_weight.grad

    def run_floor():
        y, dx, dw_in, *_ = floor_fwd_bwd(x_np, w_in, b_in, w_out, b_out, h, dy_np)
        return y, dx, dw_in

    runners = {"tinyattn": run_tinyattn, "numpy floor": run_floor}
    if not with_torch:
        return runners
    try:
        import torch
    except ImportError:
        return runners
    if torch_threads:
        torch.set_num_threads(torch_threads)
    tm = torch.nn.MultiheadAttention(E, h, batch_first=True)
    tm.load_state_dict({k: torch.tensor(v) for k, v in mha.state_dict().items()})
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
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def bench(B, n, E, h, budget, with_torch, torch_threads):
    runners = make_runners(B, n, E, h, with_torch=with_torch, torch_threads=torch_threads)
    # all implementations compute the same thing
    ref = runners["numpy floor"]()
    for name, fn in runners.items():
        for a, b in zip(fn(), ref):
            np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3, err_msg=name)
    times = {name: [] for name in runners}
    start = time.perf_counter()
    rounds = 0
    while rounds < 7 or (time.perf_counter() - start < budget and rounds < 1000):
        for name, fn in runners.items():
            time.sleep(PAUSE)
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
        rounds += 1
    med = {name: statistics.median(ts) for name, ts in times.items()}
    mem = {name: peak_memory(fn) for name, fn in runners.items() if name != "torch"}
    return med, mem, rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short time budget per size")
    parser.add_argument("--no-torch", action="store_true", help="leave torch out even if it is installed")
    parser.add_argument(
        "--torch-threads", type=int, default=0,
        help="torch.set_num_threads(N); torch's thread pool, idle or not, slows NumPy's BLAS in the same process",
    )
    args = parser.parse_args()
    budget = 0.5 if args.quick else 4.0
    print(f"numpy {np.__version__}; float32, batch_first self-attention, need_weights=False; median fwd+bwd times\n")
    header = f"{'(B, n, E, h)':>18} | {'tinyattn':>10} | {'floor':>10} | {'torch':>10} | {'ta/floor':>8} | "
    header += f"{'ta/torch':>8} | {'mem ta/floor':>12} | rounds"
    print(header)
    print("-" * len(header))
    for B, n, E, h in SIZES:
        med, mem, rounds = bench(B, n, E, h, budget, not args.no_torch, args.torch_threads)
        t_ta, t_fl, t_to = med["tinyattn"], med["numpy floor"], med.get("torch")
        to = f"{t_to * 1e3:8.3f}ms" if t_to else f"{'-':>10}"
        ratio_torch = f"{t_ta / t_to:8.2f}" if t_to else f"{'-':>8}"
        print(
            f"{str((B, n, E, h)):>18} | {t_ta * 1e3:8.3f}ms | {t_fl * 1e3:8.3f}ms | {to} | {t_ta / t_fl:8.2f} | "
            f"{ratio_torch} | {mem['tinyattn'] / mem['numpy floor']:12.2f} | {rounds}"
        )


if __name__ == "__main__":
    main()
