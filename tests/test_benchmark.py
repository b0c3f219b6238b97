"""The benchmark's three implementations compute the same thing (no timing here: see benchmarks/)."""

import importlib
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import bench_mha  # noqa: E402


def run_benchmark(script, *args):
    """What ``python benchmarks/<script> <args>`` prints (a failing run fails the test)."""
    return subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", script), *args], capture_output=True,
                          text=True, check=True, timeout=120).stdout


def test_floor_and_both_tinyattn_paths_agree():
    runners = bench_mha.make_runners(2, 6, 16, 4, with_torch=False)
    floor = runners["floor"]()
    for path in ("composed", "fused"):
        for name, a, b in zip(["output", "dX", "dW_in"], runners[path](), floor):
            np.testing.assert_allclose(bench_mha.as_numpy(a), b, rtol=1e-4, atol=1e-5, err_msg=f"{path}: {name}")


def test_bench_mha_times_each_sample_over_the_calls_asked_for(monkeypatch):
    """--calls N: every sample runs each runner N times back to back and reports the time of one call; the
    runners take turns in a new order each round."""
    made = bench_mha.make_runners
    counts, calls = {}, []
    clock = [0.0]  # a clock on which every call takes exactly one second

    def counting(*args, **kwargs):
        runners = made(*args, **kwargs)

        def count(name, fn):
            def run():
                counts[name] = counts.get(name, 0) + 1
                calls.append(name)
                clock[0] += 1.0
                return fn()
            return run

        return {name: count(name, fn) for name, fn in runners.items()}

    monkeypatch.setattr(bench_mha, "make_runners", counting)
    monkeypatch.setattr(bench_mha.time, "perf_counter", lambda: clock[0])
    med, _, rounds = bench_mha.bench(2, 6, 16, 4, budget=0.0, with_torch=False, torch_threads=None, min_rounds=3,
                                     calls=4)
    assert rounds == 3
    # one call checks the result (the floor's, once more as the reference), 3 rounds of 4, one measures memory
    assert counts == {"composed": 14, "fused": 14, "floor": 15}, counts
    assert med == {"composed": 1.0, "fused": 1.0, "floor": 1.0}, med  # seconds per call, not per sample of four
    rounds_order = [tuple(calls[i] for i in range(start, start + 12, 4)) for start in range(4, 4 + 36, 12)]
    assert len(set(rounds_order)) > 1, rounds_order  # a new order each round: none always follows the same one


def test_bench_mha_runs_another_version_on_the_same_weights(tmp_path):
    """--against: the other version's two paths compute what the floor computes (so on the same weights and
    inputs), and they run that version's code, not this one's."""
    from compare_commits import other_package

    other_package(ROOT, str(tmp_path))  # this checkout, copied in as tinyattn_other
    sys.path.insert(0, str(tmp_path))
    try:
        other = importlib.import_module("tinyattn_other")
        runners = bench_mha.make_runners(2, 4, 8, 2, with_torch=False, other=other)
        ref = runners["floor"]()
        for name in ("composed, old", "fused, old"):
            out = runners[name]()
            assert type(out[0]).__module__.startswith("tinyattn_other."), (name, type(out[0]))
            for a, b in zip(out, ref):
                np.testing.assert_allclose(bench_mha.as_numpy(a), b, rtol=1e-4, atol=1e-5, err_msg=name)
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m.split(".")[0] == "tinyattn_other"]:
            del sys.modules[module]


def test_bench_mha_prints_each_path_new_over_old(monkeypatch, capsys):
    med = {"floor": 1e-3, "composed": 4e-3, "fused": 3e-3, "composed, old": 8e-3, "fused, old": 5e-3}
    mem = {"floor": 0, "composed": 0, "fused": 0}
    monkeypatch.setattr(bench_mha, "bench", lambda *args, **kwargs: (med, mem, 7))
    bench_mha.table([(2, 4, 8, 2)], 0.0, False, None, other=object(), other_label="f825cbd")
    assert ("against f825cbd: composed 8.00ms (8.00x the floor), new/old = 0.50; "
            "fused 5.00ms (5.00x the floor), new/old = 0.60") in capsys.readouterr().out


def test_bench_mha_against_a_checkout_end_to_end():
    out = run_benchmark("bench_mha.py", "--sizes", "2,4,8,2", "--quick", "--no-torch", "--calls", "2",
                        "--against", ROOT)
    assert re.search(r"against .*: composed [\d.]+ms \([\d.]+x the floor\), new/old = [\d.]+; fused", out), out


def test_the_students_path_runs_through_the_core_and_not_torchs_extras():
    """The lines a chapter-size MultiheadAttention forward+backward executes: the core's apply, node, engine and ops
    are on it; torch's methods and namespace beyond the core are not (new API belongs beside the teaching code)."""
    import student_path

    lines = student_path.student_path()
    files = {path for path, _ in lines}
    for core in ("function.py", "engine.py", "tensor.py", "ops/matmul.py", "ops/softmax.py"):
        assert f"tinyattn/autograd/core/{core}" in files, core
    assert "tinyattn/autograd/namespace.py" not in files
    tensor_py = (pathlib.Path(ROOT) / "tinyattn" / "autograd" / "tensor.py").read_text(encoding="utf-8").splitlines()
    everyday = next(i for i, line in enumerate(tensor_py, 1) if "# == torch's everyday methods" in line)
    after_class = next(i for i, line in enumerate(tensor_py, 1) if i > everyday and line.startswith("def "))
    assert not [line for path, line in lines if path == "tinyattn/autograd/tensor.py" and everyday < line < after_class]


def test_compare_commits_times_two_checkouts_side_by_side():
    out = run_benchmark("compare_commits.py", ROOT, "--rounds", "2", "--repeat", "2")
    floor = float(re.search(r"floor: ([\d.]+) ms", out).group(1))
    for path in ("composed", "fused"):  # each ratio is that path's time over the floor's, from the times printed
        new, old, new_x, old_x = (float(v) for v in re.search(
            rf"{path}: new ([\d.]+) ms, old \(.*\) ([\d.]+) ms, new/old = [\d.]+; "
            r"to the floor: new ([\d.]+)x, old ([\d.]+)x", out).groups())
        assert new_x == pytest.approx(new / floor, rel=0.05) and old_x == pytest.approx(old / floor, rel=0.05), out
    out = run_benchmark("compare_commits.py", ROOT, "--rounds", "2", "--repeat", "1", "--pause", "0.001")
    assert "2 interleaved rounds of 1 calls, each after a 0.001 s pause" in out and "new/old =" in out


def test_compare_commits_times_the_forward_and_the_backward_apart(monkeypatch):
    """--phases: each call of a runner appends (zero_grad and forward, backward, release) in seconds, split where
    the backward starts and ends: a forward made 20 ms slower shows in the first part only, a backward made 60 ms
    slower in the second only, and a graph whose freeing takes 40 ms in the third only."""
    import time

    import compare_commits

    import tinyattn as ta
    from tinyattn import nn

    forward, backward = nn.MultiheadAttention.forward, ta.Tensor.backward
    monkeypatch.setattr(nn.MultiheadAttention, "forward", lambda *a, **k: time.sleep(0.02) or forward(*a, **k))
    monkeypatch.setattr(ta.Tensor, "backward", lambda *a, **k: time.sleep(0.06) or backward(*a, **k))

    class SlowToFree:  # (kept by the input: freed with the graph, when the runner drops its output)
        def __del__(self):
            time.sleep(0.04)

    tensor = ta.tensor
    monkeypatch.setattr(ta, "tensor", lambda *a, **k: setattr(made := tensor(*a, **k), "kept", SlowToFree()) or made)
    phases: list = []
    for need_weights in (True, False):
        run = compare_commits.runner(ta, 2, 4, 8, 2, need_weights, phases)
        run()
        run()
    assert len(phases) == 4, phases
    for before, during, release in phases:
        assert 0.02 <= before < 0.04 <= release < 0.06 <= during, phases
    assert compare_commits.runner(ta, 2, 4, 8, 2, True)() is None  # (without a list: the plain call, untimed)


def test_compare_commits_prints_each_phase_new_over_old():
    out = run_benchmark("compare_commits.py", ROOT, "--rounds", "2", "--repeat", "1", "--phases")
    for path in ("composed", "fused"):
        for phase in ("forward", "backward", "release"):
            line = rf"^ *{path} {phase}: new ([\d.]+) µs, old ([\d.]+) µs, new/old = ([\d.]+)$"
            new, old, ratio = (float(v) for v in re.search(line, out, re.MULTILINE).groups())
            assert ratio == pytest.approx(new / old, rel=0.02), out  # (each time rounded to 0.01 µs)
        assert re.search(rf"^ *{path}: new [\d.]+ ms, old .* new/old = [\d.]+; to the floor", out, re.MULTILINE), out


def test_compare_commits_places_the_two_versions_differently_in_each_layout(monkeypatch):
    """--layouts: each process imports the two versions in an order its seed draws, each after padding memory of
    an amount its seed draws; so over the processes both orders occur, after different amounts."""
    import random

    import compare_commits

    orders, paddings, imported = set(), set(), []
    monkeypatch.setattr(compare_commits.importlib, "import_module", lambda name: imported.append(name) or name)
    for seed in range(1, 9):
        imported.clear()
        monkeypatch.setattr(compare_commits, "_PADDING", [])
        new, old = compare_commits.import_both(random.Random(seed))
        assert (new, old) == ("tinyattn", "tinyattn_other")  # each returned as itself, whatever the order
        orders.add(tuple(imported))
        paddings.add(tuple(sum(map(len, pad)) for pad in compare_commits._PADDING))
    assert orders == {("tinyattn", "tinyattn_other"), ("tinyattn_other", "tinyattn")}, orders
    assert len(paddings) == 8 and all(len(p) == 2 for p in paddings), paddings
    imported.clear()
    compare_commits.import_both(None)  # (one process as it is: this checkout first, no padding)
    assert imported == ["tinyattn", "tinyattn_other"]


def test_compare_commits_averages_new_over_old_across_layouts():
    out = run_benchmark("compare_commits.py", ROOT, "--rounds", "2", "--repeat", "1", "--pause", "0.001",
                        "--layouts", "3")
    assert "3 processes, each its own layout in memory, each 2 interleaved rounds of 1 calls" in out, out
    for path in ("composed", "fused"):
        found = re.search(rf"{path}: new/old = ([\d.]+) \(geometric mean; standard error ±([\d.]+)\), per process "
                          r"([\d.]+) to ([\d.]+): ([\d. ]+)$", out, re.MULTILINE)
        mean, error, low, high = (float(v) for v in found.groups()[:4])
        each = [float(v) for v in found.group(5).split()]
        assert len(each) == 3 and (low, high) == (min(each), max(each)), out
        logs = np.log(each)  # the mean of the logs, and their standard error: the ratios' spread, not the times'
        assert mean == pytest.approx(np.exp(logs.mean()), abs=2e-3), out
        assert error == pytest.approx(logs.std(ddof=1) / np.sqrt(3), abs=2e-3), out


def over_layouts_printing(monkeypatch, capsys, outputs, phases=False):
    """What ``compare_commits.over_layouts`` prints when its processes print ``outputs``, one each, in turn; and
    the command each process was started with."""
    import argparse

    import compare_commits

    commands, printed = [], iter(outputs)

    def process(command, **kwargs):
        commands.append(command)
        return subprocess.CompletedProcess(command, 0, stdout=next(printed))

    monkeypatch.setattr(compare_commits.subprocess, "run", process)
    compare_commits.over_layouts(argparse.Namespace(other="x", size="3,5,16,2", rounds=2, repeat=1, pause=0.0,
                                                    after_torch=False, layouts=len(outputs), phases=phases))
    return capsys.readouterr().out, commands


def test_compare_commits_over_layouts_takes_the_geometric_mean_of_the_ratios(monkeypatch, capsys):
    """Ratios 0.5, 1 and 2 (each process's new/old, as it prints them) average to 1 geometrically, not to 1.17; the
    standard error is that of their logs; each process gets its own seed."""
    outputs = [f" composed: new 1.000 ms, old (x) 1.000 ms, new/old = {composed:.3f}; to the floor: new 1.00x\n"
               f"    fused: new 1.000 ms, old (x) 1.000 ms, new/old = {fused:.3f}; to the floor: new 1.00x\n"
               for composed, fused in [(0.5, 0.8), (1.0, 1.0), (2.0, 1.25)]]
    out, commands = over_layouts_printing(monkeypatch, capsys, outputs)
    log_error = np.log([0.5, 1.0, 2.0]).std(ddof=1) / np.sqrt(3)
    assert f"composed: new/old = 1.000 (geometric mean; standard error ±{log_error:.3f})" in out, out
    assert "per process 0.500 to 2.000: 0.500 1.000 2.000" in out and "fused: new/old = 1.000" in out, out
    assert [command[command.index("--layout-seed") + 1] for command in commands] == ["1", "2", "3"]


def test_compare_commits_over_layouts_averages_each_phase_apart(monkeypatch, capsys):
    """With --phases each process prints a line per path and phase; each gets its own geometric mean, and the
    processes are asked for the phases."""
    outputs = [f" composed: new 1.000 ms, old (x) 1.000 ms, new/old = {whole:.3f}; to the floor: new 1.00x\n"
               f" composed forward: new 1.00 µs, old 1.00 µs, new/old = {forward:.3f}\n"
               f"composed backward: new 1.00 µs, old 1.00 µs, new/old = {backward:.3f}\n"
               for whole, forward, backward in [(1.0, 0.5, 2.0), (1.0, 2.0, 0.5)]]
    out, commands = over_layouts_printing(monkeypatch, capsys, outputs, phases=True)
    assert all("--phases" in command for command in commands), commands
    assert "composed forward: new/old = 1.000" in out and "per process 0.500 to 2.000: 0.500 2.000" in out, out
    assert "composed backward: new/old = 1.000" in out and "per process 0.500 to 2.000: 2.000 0.500" in out, out
    assert "         composed: new/old = 1.000" in out and "per process 1.000 to 1.000" in out, out


def test_compare_commits_can_time_each_call_right_after_torchs():
    pytest.importorskip("torch")
    out = run_benchmark("compare_commits.py", ROOT, "--after-torch", "--rounds", "2")
    assert "2 interleaved rounds of 1 calls, each after torch's call, each after a 0.003 s pause" in out, out
    assert out.count("new/old =") == 2


def test_bench_kv_cache_prints_both_rates_per_length():
    import re

    out = run_benchmark("bench_kv_cache.py", "--lengths", "4,6", "--batch", "2", "--rounds", "1")
    rows = [line.split() for line in out.splitlines() if re.match(r"^\s+\d+\s", line)]
    assert [r[0] for r in rows] == ["4", "6"] and all(r[3].endswith("x") for r in rows), out


def test_bench_vmap_checks_the_three_ways_agree_and_prints_a_row_per_batch():
    """The script asserts that vmap's per-sample gradients equal the hand loop's and sum to the batched one."""
    out = run_benchmark("bench_vmap.py", "--batches", "2,3", "--rounds", "1", "--no-torch")
    rows = [line.split() for line in out.splitlines() if re.match(r"^\s+\d+\s", line)]
    assert [r[0] for r in rows] == ["2", "3"] and all(len(r) == 6 for r in rows), out


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="count_instructions needs valgrind")
def test_instruction_counts_repeat_and_see_the_fused_path_do_less():
    """What count_instructions.py promises: the same count run after run (unlike a time), and a difference
    between two pieces of code doing different work (the fused path runs 7 ops where the composed runs 25)."""
    import count_instructions

    # (20 calls: a run's own start-up varies by a few thousand instructions, which 5 calls spread to 0.1% of one)
    composed = [count_instructions.per_call(ROOT, "tinyattn", "3,5,16,2", True, 20) for _ in range(2)]
    fused = count_instructions.per_call(ROOT, "tinyattn", "3,5,16,2", False, 20)
    assert abs(composed[0] - composed[1]) < 1e-3 * composed[0], composed
    assert fused < 0.8 * composed[0], (fused, composed)
