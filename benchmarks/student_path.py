"""The student's path: the distinct tinyattn source lines one chapter-size MultiheadAttention
forward+backward executes (B=3, n=5, d_model=16, h=2, need_weights=True), counted with ``sys.settrace``.

    python benchmarks/student_path.py            # the count
    python benchmarks/student_path.py --list     # and every line, file by file

What a student stepping through the gradient reads; new API must not add to it.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np


def student_path() -> set[tuple[str, int]]:
    """Every (file, line) of the package executed by the forward and the backward (after one warm-up run)."""
    import tinyattn as ta
    from tinyattn import nn

    root = os.path.dirname(ta.__file__)
    ta.manual_seed(0)
    mha = nn.MultiheadAttention(16, 2, batch_first=True)
    x = ta.randn(3, 5, 16, requires_grad=True)
    upstream = np.random.default_rng(0).standard_normal((3, 5, 16)).astype(np.float32)
    seen: set[tuple[str, int]] = set()

    def tracer(frame, event, arg):  # type: ignore[no-untyped-def]
        if event == "line" and frame.f_code.co_filename.startswith(root):
            seen.add((os.path.relpath(frame.f_code.co_filename, os.path.dirname(root)), frame.f_lineno))
        return tracer

    sys.settrace(tracer)
    try:
        out, _ = mha(x, x, x, need_weights=True)
        out.backward(upstream)
    finally:
        sys.settrace(None)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print every line, file by file")
    args = parser.parse_args()
    seen = student_path()
    if args.list:
        for path, line in sorted(seen):
            print(f"{path}:{line}")
    print(len(seen))


if __name__ == "__main__":
    main()
