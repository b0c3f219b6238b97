"""Generation with and without the KV cache: tokens per second of the adder's GPT at a few lengths.

    python benchmarks/bench_kv_cache.py                       # lengths 8, 32, 128; batch 8
    python benchmarks/bench_kv_cache.py --lengths 16,64 --batch 1 --rounds 9

Each round generates ``length`` tokens from a one-token prompt with the cache and without it
(which feeds the whole sequence so far at every step), alternating, pinned to one CPU with BLAS
on one thread. It prints the median tokens per second of each and their ratio. Without the cache
step t costs O(t) (attention over t positions, and every layer recomputed for all of them); with
it each step computes the new position only, so the ratio grows with the length.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--lengths", default="8,32,128", help="tokens generated, comma-separated")
    parser.add_argument("--batch", type=int, default=8, help="sequences generated at once")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per length (median taken)")
    parser.add_argument("--attention", choices=["sdpa", "composed"], default="sdpa")
    args = parser.parse_args(argv)
    from bench_mha import pin  # (this folder is the script's, first on sys.path)

    print(pin(1))  # one CPU, BLAS (and torch) on one thread, as bench_mha measures
    sys.path.insert(0, HERE)
    import tinyattn as torch

    spec = importlib.util.spec_from_file_location("train_adder", os.path.join(HERE, "examples", "train_adder.py"))
    adder = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(adder)  # type: ignore[union-attr]

    lengths = [int(n) for n in args.lengths.split(",")]
    print(f"GPT: 3 layers, 3 heads, width 48, {args.attention}; batch {args.batch}; median of {args.rounds} rounds")
    print(f"{'tokens':>7} {'cached tok/s':>13} {'uncached tok/s':>15} {'speed-up':>9}")
    for length in lengths:
        torch.manual_seed(0)
        model = adder.GPT(vocab_size=10, block_size=length + 1, attention=args.attention)
        prompt = torch.zeros(args.batch, 1, dtype=torch.long)
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.rounds):
            for use_cache in (True, False):
                start = time.perf_counter()
                model.generate(prompt, length, use_cache=use_cache, greedy=True)
                times[use_cache].append(time.perf_counter() - start)
        rate = {k: args.batch * length / statistics.median(v) for k, v in times.items()}
        print(f"{length:>7} {rate[True]:>13.0f} {rate[False]:>15.0f} {rate[True] / rate[False]:>8.1f}x")


if __name__ == "__main__":
    main()
