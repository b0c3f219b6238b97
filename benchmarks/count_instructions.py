"""Machine instructions one MultiheadAttention forward+backward executes, counted by valgrind's callgrind:
this checkout, and another commit beside it.

    python benchmarks/count_instructions.py                       # this checkout, both paths, chapter size
    python benchmarks/count_instructions.py f825cbd               # and a commit of this repository
    python benchmarks/count_instructions.py /path/to/checkout --size 8,64,128,8 --calls 50

A time moves with the machine's load; this count does not: the same code, inputs and hash seed give
the same number run after run (to a few hundred instructions in two million), so a change of 1% shows at
once, where timing needs many interleaved rounds (``compare_commits.py``) to see it. It is not a time:
an instruction inside a NumPy call and one inside the interpreter take different time, so the ratio of
two counts is near, not equal to, the ratio of their times. Nor does it see memory: keeping a node's
edges as the lists it built saved 0.4% of the instructions, and made a single call after a pause about
1% slower (``compare_commits.py --layouts``), because each kept list held memory the next op would have
reused while still in the cache. Time a change that keeps objects alive, not only count it.

Each count is the difference between a run of ``--calls`` calls and a run of none (both after the same
warm-up), divided by ``--calls``.
Needs valgrind (Debian's package).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARM_UP = 20


def child(where: str, package: str, size: str, need_weights: bool, calls: int) -> None:
    """Run the MultiheadAttention of ``package`` (found in ``where``) WARM_UP + ``calls`` times (BLAS on the one
    thread ``instructions`` asks for in the environment)."""
    sys.path.insert(0, where)
    from compare_commits import runner  # (this folder is the script's, first on sys.path)

    B, n, E, h = (int(v) for v in size.split(","))
    run = runner(importlib.import_module(package), B, n, E, h, need_weights)
    for _ in range(WARM_UP + calls):
        run()


def instructions(where: str, package: str, size: str, need_weights: bool, calls: int) -> int:
    """callgrind's total for the child run with ``calls`` calls."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
               "--child", where, package, size, str(int(need_weights)), str(calls)]
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or found is None:
        raise RuntimeError(f"count_instructions: the counted run failed (exit {done.returncode}):\n"
                           f"{done.stderr[-3000:]}")
    return int(found.group(1))


def per_call(where: str, package: str, size: str, need_weights: bool, calls: int) -> float:
    """Instructions per forward+backward: (a run of ``calls`` calls - a run of none) / ``calls``."""
    return (instructions(where, package, size, need_weights, calls)
            - instructions(where, package, size, need_weights, 0)) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", nargs="?", help="a commit (e.g. HEAD~1) or the path of another checkout")
    parser.add_argument("--size", default="3,5,16,2", help="B,n,E,h (default: the chapter's 3,5,16,2)")
    parser.add_argument("--calls", type=int, default=200, help="forward+backward calls counted")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        where, package, size, need_weights, calls = args.child
        child(where, package, size, need_weights == "1", int(calls))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("count_instructions: valgrind is not installed (apt-get install valgrind)")
    from compare_commits import other_package

    with tempfile.TemporaryDirectory() as tmp:
        packages = [("this checkout", HERE, "tinyattn")]
        if args.other:
            other_package(args.other, tmp)
            packages.append((args.other, tmp, "tinyattn_other"))
        size = tuple(int(v) for v in args.size.split(","))
        print(f"(B, n, E, h) = {size}, instructions per forward+backward ({args.calls} calls counted)")
        for path, need_weights in (("composed", True), ("fused", False)):
            counts = [per_call(where, package, args.size, need_weights, args.calls) for _, where, package in packages]
            line = f"{path:>9}: " + ", ".join(f"{label} {count / 1e6:.3f}M" for (label, _, _), count in
                                             zip(packages, counts))
            if len(counts) == 2:
                line += f", ratio {counts[0] / counts[1]:.3f}"
            print(line)


if __name__ == "__main__":
    main()
