"""The benchmark's three implementations compute the same thing (no timing here: see benchmarks/)."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import bench_mha  # noqa: E402


def test_floor_and_both_tinyattn_paths_agree():
    runners = bench_mha.make_runners(2, 6, 16, 4, with_torch=False)
    floor = runners["floor"]()
    for path in ("composed", "fused"):
        for name, a, b in zip(["output", "dX", "dW_in"], runners[path](), floor):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"{path}: {name}")
