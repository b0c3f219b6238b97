"""This checkout against another commit, side by side in one process: a MultiheadAttention
forward+backward at one size, both paths (composed: need_weights=True; fused: need_weights=False).

    python benchmarks/compare_commits.py 3f5c6c0              # a commit of this repository
    python benchmarks/compare_commits.py /path/to/checkout    # or another checkout
    python benchmarks/compare_commits.py HEAD~3 --size 8,64,128,8 --rounds 60
    python benchmarks/compare_commits.py f825cbd --repeat 1 --pause 0.003 --rounds 400   # as bench_mha times
    python benchmarks/compare_commits.py f825cbd --after-torch --rounds 400   # each call right after torch's
    python benchmarks/compare_commits.py f825cbd --repeat 1 --pause 0.003 --rounds 150 --layouts 30
    python benchmarks/compare_commits.py f825cbd --repeat 1 --pause 0.003 --rounds 150 --layouts 30 --phases

The other commit's package is copied in as ``tinyattn_other`` (the package imports itself relatively
only), so both run in the same process, pinned to one CPU with BLAS on one thread, with bench_mha's
hand-fused NumPy floor beside them. Round after round each takes its turn, in a new order each round
(a noisy machine slows them alike). It prints the median time of each, the ratio new / old per path
(what "0.6x of today's time" is measured with), and each one's ratio to the floor.

By default a sample is 50 calls in a row, warm (as ``bench_mha.py --calls 50``). ``--repeat 1 --pause
0.003`` times one call after a short sleep instead, as ``bench_mha.py`` does by default: the cost of a
single call whose code and data the caches no longer hold, which the floor pays too.

``--after-torch`` times one call right after a torch MultiheadAttention forward+backward (and the
pause): a call whose first use of each NumPy routine runs from cold caches. Two copies of the same
code differ by about 2% there (the copy imported first is the slower; now and then a run differs by
6-8%): run it twice, and read a change below that as noise.

A single call after a pause depends on where the code's objects happen to lie in memory: in one process,
two identical copies measure anywhere from 0.93 to 1.04 of each other. ``--layouts N`` runs the whole
comparison in N fresh processes, each importing the two versions in a random order after a random amount
of memory taken first, and prints the geometric mean of new/old over them with its standard error: the
placement averages out, and the error says how far the mean can be trusted over placements. With no
difference to find (this checkout against itself, ``compare_commits.py .`` with
``--repeat 1 --pause 0.003 --rounds 150 --layouts 40``) it gave 0.999 for both paths (±0.004 composed,
±0.005 fused): the harness itself favours neither side. It does not cover the machine's drift from one
run to the next: the same 40 layouts, run again on the same code half an hour apart, gave 1.012 (±0.005)
and 1.025 (±0.003). Run twice before reading a difference under 1.5%.

``--phases`` also times each call's three parts apart, medians per call: zero_grad and the forward pass;
the backward pass; and the release, the graph freed as the output is dropped (after a backward without
retain_graph the nodes and their edges stay, as torch's ``next_functions`` do, until then). A version
that frees the nodes during backward instead moves that time from one part to another; the whole call
(timed outside, as without ``--phases``) is what to compare.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def other_package(where: str, into: str) -> str:
    """Copy the ``tinyattn`` package of ``where`` (a commit or a checkout path) into ``into/tinyattn_other``."""
    target = os.path.join(into, "tinyattn_other")
    if os.path.isdir(where):
        shutil.copytree(os.path.join(where, "tinyattn"), target)
        return target
    files = subprocess.run(["git", "-C", HERE, "ls-tree", "-r", "--name-only", where, "tinyattn"],
                           check=True, capture_output=True, text=True).stdout.split()
    for name in files:
        if not name.endswith(".py"):
            continue
        blob = subprocess.run(["git", "-C", HERE, "show", f"{where}:{name}"], check=True, capture_output=True).stdout
        path = os.path.join(target, os.path.relpath(name, "tinyattn"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(blob)
    return target


def runner(lib: Any, B: int, n: int, E: int, h: int, need_weights: bool,
           phases: list[tuple[float, float, float]] | None = None) -> Callable[[], None]:
    """One MHA forward+backward with fixed weights and inputs, in ``lib``. With a ``phases`` list, each call
    appends to it its three parts in seconds: ``(zero_grad and the forward pass, the backward pass, dropping the
    output and the graph behind it)``."""
    nn = importlib.import_module(lib.__name__ + ".nn")
    rng = np.random.default_rng(0)
    lib.manual_seed(0)
    mha = nn.MultiheadAttention(E, h, batch_first=True)
    x_np = rng.standard_normal((B, n, E)).astype(np.float32)
    dy = rng.standard_normal((B, n, E)).astype(np.float32)

    def run() -> None:
        mha.zero_grad()
        x = lib.tensor(x_np, requires_grad=True)
        y, _ = mha(x, x, x, need_weights=need_weights)
        y.backward(dy)

    def run_in_phases() -> None:
        start = time.perf_counter()
        mha.zero_grad()
        x = lib.tensor(x_np, requires_grad=True)
        y, weights = mha(x, x, x, need_weights=need_weights)
        forward = time.perf_counter()
        y.backward(dy)
        backward = time.perf_counter()
        del x, y, weights  # (the graph, and whatever backward left of it, freed)
        phases.append((forward - start, backward - forward, time.perf_counter() - backward))  # type: ignore[union-attr]

    return run if phases is None else run_in_phases


# --phases: zero_grad and the forward pass, the backward pass, the graph freed as the output is dropped
PHASES = ("forward", "backward", "release")
_PADDING: list[list[bytearray]] = []  # (kept alive: the memory a layout put before each package and runner)


def _pad(layout: random.Random, most: int) -> None:
    """Take up to ``most`` blocks of 1 to 600 bytes (how many, and each size, drawn from ``layout``) and keep them:
    what is allocated next lands after them."""
    _PADDING.append([bytearray(layout.randint(1, 600)) for _ in range(layout.randint(0, most))])


def import_both(layout: random.Random | None) -> tuple[Any, Any]:
    """This checkout's ``tinyattn`` and the other's ``tinyattn_other``, both already on ``sys.path``.

    Where each one's objects land in memory moves its time by a few percent (cache sets, pages): in one process,
    a lone call of one copy of the same code took 0.93 to 1.04 of the other's. With ``layout``,
    the two are imported in a random order, each after a random amount of memory taken first, so that over
    many processes (``--layouts``) that placement averages out instead of favouring one side.
    """
    names, modules = ["tinyattn", "tinyattn_other"], {}
    if layout is not None:
        layout.shuffle(names)
    for name in names:
        if layout is not None:
            _pad(layout, 3000)
        modules[name] = importlib.import_module(name)
    return modules["tinyattn"], modules["tinyattn_other"]


def measure(args: argparse.Namespace, layout: random.Random | None) -> dict[tuple[str, str], float]:
    """Median seconds per call of each path of each version, and of the floor: interleaved rounds in this process
    (with ``layout``: in one random placement of the two versions in memory)."""
    B, n, E, h = (int(v) for v in args.size.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        other_package(args.other, tmp)
        sys.path.insert(0, HERE)
        sys.path.insert(0, tmp)
        tinyattn, tinyattn_other = import_both(layout)
        from bench_mha import make_runners, pin  # (this folder is the script's; after import_both: it imports tinyattn)

        print(pin(1))  # one CPU, BLAS (and torch) on one thread, as bench_mha measures
        runs: dict[tuple[str, str], Callable[[], Any]] = {}
        spent: dict[tuple[str, str], list[tuple[float, float, float]]] = {}  # (--phases: each call's three parts)
        made = [(label, lib, path, weights) for label, lib in (("new", tinyattn), ("old", tinyattn_other))
                for path, weights in (("composed", True), ("fused", False))]
        for label, lib, path, weights in (layout.sample(made, len(made)) if layout is not None else made):
            if layout is not None:
                _pad(layout, 300)
            if args.phases:
                spent[label, path] = []
            runs[label, path] = runner(lib, B, n, E, h, weights, spent.get((label, path)))
        bench = make_runners(B, n, E, h, with_torch=args.after_torch)
        runs["floor", "floor"] = bench["floor"]  # the same work written out in NumPy, fused where it helps
        times: dict[tuple[str, str], list[float]] = {key: [] for key in runs}
        for fn in runs.values():
            fn()  # warm up
        before = bench.get("torch")  # bench_mha's torch call (with --after-torch)
        if args.after_torch and before is None:
            raise SystemExit("compare_commits: --after-torch needs torch installed")
        order, shuffle = list(runs), (layout or random.Random(0)).shuffle
        for _ in range(args.rounds):
            shuffle(order)  # a new order each round: none always runs right after the same one
            for key in order:
                fn = runs[key]
                if before is not None:
                    before()
                time.sleep(args.pause)
                start = time.perf_counter()
                for _ in range(args.repeat):
                    fn()
                times[key].append((time.perf_counter() - start) / args.repeat)
    medians = {key: statistics.median(t) for key, t in times.items()}
    for (label, path), parts in spent.items():  # (--phases; the first call was the warm-up)
        for i, phase in enumerate(PHASES):
            medians[label, f"{path} {phase}"] = statistics.median(part[i] for part in parts[1:])
    return medians


def over_layouts(args: argparse.Namespace) -> None:
    """Run ``measure`` in ``args.layouts`` fresh processes, each in its own random layout; print, per path, the
    geometric mean of new/old over them, its standard error, and the range."""
    command = [sys.executable, os.path.abspath(__file__), args.other, "--size", args.size, "--rounds",
               str(args.rounds), "--repeat", str(args.repeat), "--pause", str(args.pause)]
    command += ["--after-torch"] if args.after_torch else []
    command += ["--phases"] if args.phases else []
    ratios: dict[str, list[float]] = {}  # path (or "path phase") -> each process's new/old
    for seed in range(1, args.layouts + 1):
        out = subprocess.run([*command, "--layout-seed", str(seed)], check=True, capture_output=True,
                             text=True).stdout
        for path, value in re.findall(r"^ *((?:composed|fused)(?: \w+)?): .* new/old = ([\d.]+)", out, re.MULTILINE):
            ratios.setdefault(path, []).append(float(value))
    print(f"(B, n, E, h) = ({args.size}), {args.layouts} processes, each its own layout in memory, each "
          f"{args.rounds} interleaved rounds of {args.repeat} calls" + (f", each after a {args.pause} s pause"
                                                                       if args.pause else ""))
    width = max(map(len, ratios))
    for path, values in ratios.items():
        logs = [math.log(v) for v in values]
        mean, spread = statistics.mean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
        print(f"{path:>{width}}: new/old = {math.exp(mean):.3f} (geometric mean; standard error ±{spread:.3f}), "
              f"per process {min(values):.3f} to {max(values):.3f}:", " ".join(f"{v:.3f}" for v in values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", help="a commit (e.g. HEAD~1) or the path of another checkout")
    parser.add_argument("--size", default="3,5,16,2", help="B,n,E,h (default: the chapter's 3,5,16,2)")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=50, help="calls per timed sample")
    parser.add_argument("--pause", type=float, default=0.0,
                        help="seconds to sleep before each sample (bench_mha.py times one call after 0.003 s)")
    parser.add_argument("--after-torch", action="store_true",
                        help="run torch's MultiheadAttention before each sample (one call each, 0.003 s pause)")
    parser.add_argument("--layouts", type=int, default=0,
                        help="repeat the whole comparison in N fresh processes, each with its own random placement "
                             "of the two versions in memory, and average the ratios (N >= 2)")
    parser.add_argument("--phases", action="store_true",
                        help="also time each call's three parts: zero_grad and the forward pass, the backward pass, "
                             "and freeing the graph as the output is dropped")
    parser.add_argument("--layout-seed", type=int, help=argparse.SUPPRESS)  # (one of those processes)
    args = parser.parse_args()
    if args.after_torch:
        args.repeat, args.pause = 1, args.pause or 0.003
    if args.layouts:
        if args.layouts < 2:
            parser.error(f"--layouts must be at least 2 (a standard error needs two), got {args.layouts}")
        over_layouts(args)
        return
    B, n, E, h = (int(v) for v in args.size.split(","))
    med = measure(args, None if args.layout_seed is None else random.Random(args.layout_seed))
    pause = f", each after a {args.pause} s pause" if args.pause else ""
    pause = f", each after torch's call{pause}" if args.after_torch else pause
    print(f"(B, n, E, h) = {(B, n, E, h)}, {args.rounds} interleaved rounds of {args.repeat} calls{pause}, medians")
    floor = med["floor", "floor"]
    for path in ("composed", "fused"):
        new, old = med["new", path], med["old", path]
        print(f"{path:>9}: new {new * 1e3:.3f} ms, old ({args.other}) {old * 1e3:.3f} ms, new/old = {new / old:.3f}; "
              f"to the floor: new {new / floor:.2f}x, old {old / floor:.2f}x")
        for phase in PHASES if args.phases else ():
            new, old = med["new", f"{path} {phase}"], med["old", f"{path} {phase}"]
            print(f"{path + ' ' + phase:>17}: new {new * 1e6:.2f} µs, old {old * 1e6:.2f} µs, "
                  f"new/old = {new / old:.3f}")
    print(f"    floor: {floor * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
