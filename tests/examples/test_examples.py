"""The examples run as a learner would run them, as scripts in a fresh process."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FINAL = re.compile(r"^final: loss=(?P<loss>[-+0-9.eE]+|nan) accuracy=(?P<acc>[0-9.]+) time=(?P<time>[0-9.]+)s$")


def run(script, *args, cwd, expect=0, env=None):
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", script), *args],
        cwd=cwd, capture_output=True, text=True, timeout=300, env=None if env is None else {**os.environ, **env},
    )
    assert result.returncode == expect, result.stderr
    return result.stdout if expect == 0 else result.stderr


def final_line(stdout):
    match = FINAL.match(stdout.strip().splitlines()[-1])
    assert match, f"last line is not the final line: {stdout.strip().splitlines()[-1]!r}"
    return float(match["loss"]), float(match["acc"]), float(match["time"])


def test_train_toy_short_run_learns_and_draws(tmp_path):
    out = run("train_toy.py", "--steps", "120", "--out", str(tmp_path / "figs"), cwd=tmp_path)
    losses = [float(m) for m in re.findall(r"\| loss ([0-9.]+) \|", out)]
    assert len(losses) >= 5 and losses[-1] < 0.5 * losses[0], out
    for line in out.splitlines()[:-2]:
        assert re.match(r"^step \d+/120 \| loss [0-9.]+ \| acc [0-9.]+ \| \d+ it/s$", line), line
    loss, acc, _ = final_line(out)
    assert acc > 0.3  # chance is 0.1
    for name in ("training_curve.png", "attention_heads.png"):
        path = tmp_path / "figs" / name
        assert path.stat().st_size > 10_000 and path.read_bytes()[:4] == b"\x89PNG"


def test_train_toy_is_deterministic_given_seed(tmp_path):
    a = final_line(run("train_toy.py", "--steps", "40", "--seed", "3", "--quiet", "--out", "a", cwd=tmp_path))
    b = final_line(run("train_toy.py", "--steps", "40", "--seed", "3", "--quiet", "--out", "b", cwd=tmp_path))
    assert a[:2] == b[:2]


@pytest.mark.slow
def test_train_toy_defaults_reach_the_target(tmp_path):
    out = run("train_toy.py", cwd=tmp_path)
    loss, acc, seconds = final_line(out)
    assert acc >= 0.99, out
    assert seconds <= 60, out
    assert (tmp_path / "figures" / "attention_heads.png").exists()


def test_chapter_demo_prints_shapes_and_saves_figure(tmp_path):
    out = run("chapter_8_4.py", "--out", str(tmp_path), cwd=tmp_path)
    assert "Input shape: (3, 5, 16)" in out
    assert "Attention weights shape: (3, 2, 5, 5)" in out
    assert "Output shape: (3, 5, 16)" in out
    svg = (tmp_path / "ch8.4-multi-head-attn-weights.svg").read_text()
    assert svg.startswith("<?xml") and "Head 2 Attention Weights" in svg


def test_gradient_demo_agrees_with_finite_differences(tmp_path):
    out = run("gradient_demo.py", cwd=tmp_path)
    diffs = [float(d) for d in re.findall(r"max \|difference\| = ([0-9.e+-]+)", out)]
    assert len(diffs) == 2 and max(diffs) < 1e-6


EXAMPLES = ["train_toy.py", "chapter_8_4.py", "gradient_demo.py", "train_adder.py", "train_core.py"]


@pytest.mark.parametrize("script", EXAMPLES)
def test_help_lists_every_option_with_its_default_and_runs_nothing(script, tmp_path):
    out = run(script, "--help", cwd=tmp_path)
    assert out.startswith("usage:")
    assert not list(tmp_path.iterdir())  # nothing ran, nothing written
    blocks = re.split(r"\n(?=  -)", out.split("options:", 1)[1])  # one block per option
    options = [b for b in blocks if b.strip() and not b.strip().startswith("-h")]
    assert options
    for block in options:
        assert "(default:" in " ".join(block.split()), block


@pytest.mark.parametrize(
    "script, args, message",
    [
        ("train_toy.py", ["--length", "4"], "--length: needs n >= 5 to draw 21,000 distinct sequences"),
        ("train_toy.py", ["--steps", "-1"], "--steps: must be 0 or more"),
        ("train_toy.py", ["--batch-size", "0"], "--batch-size: must be at least 1"),
        ("train_toy.py", ["--lr", "0"], "--lr: must be positive"),
        ("gradient_demo.py", ["--eps", "0"], "--eps: must be in (0, 1)"),
        ("train_adder.py", ["--ndigit", "5"], "--ndigit: must be 1 to 4, got 5"),
        ("train_adder.py", ["--steps", "0"], "--steps: must be at least 1, got 0"),
        ("train_adder.py", ["--lr", "-1"], "--lr: must be positive"),
        ("train_core.py", ["--steps", "0"], "--steps: must be at least 1, got 0"),
        ("train_core.py", ["--length", "1"], "--length: must be at least 2, got 1"),
    ],
)
def test_bad_options_stop_at_once_with_the_reason(script, args, message, tmp_path):
    err = run(script, *args, cwd=tmp_path, expect=2)
    assert message in err and "Traceback" not in err


def test_an_output_path_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "taken").write_text("")
    for script in ("train_toy.py", "chapter_8_4.py"):
        err = run(script, "--out", "taken", cwd=tmp_path, expect=2)
        assert "--out: taken is a file, not a folder" in err


def test_train_toy_with_no_steps_evaluates_and_draws_the_untrained_model(tmp_path):
    out = run("train_toy.py", "--steps", "0", "--out", "figs", cwd=tmp_path)
    loss, acc, _ = final_line(out)
    assert 1.5 < loss < 4 and acc < 0.3  # about log(10) and chance
    for name in ("training_curve.png", "attention_heads.png"):
        assert (tmp_path / "figs" / name).stat().st_size > 5_000


def test_chapter_demo_colour_scale_covers_every_weight(tmp_path):
    for seed in ("0", "1", "2"):
        out = run("chapter_8_4.py", "--seed", seed, "--out", str(tmp_path), cwd=tmp_path)
        top, largest = re.search(r"Colour scale: 0 to ([0-9.]+) \(largest weight ([0-9.]+)\)", out).groups()
        assert float(largest) <= float(top) < float(largest) + 0.1


def test_train_toy_resumed_from_a_checkpoint_ends_where_an_unbroken_run_ends(tmp_path):
    unbroken = final_line(run("train_toy.py", "--steps", "60", "--seed", "2", "--quiet", "--out", "a", cwd=tmp_path))
    first = run("train_toy.py", "--steps", "30", "--seed", "2", "--save", "run.pt", "--out", "b", cwd=tmp_path)
    assert "checkpoint: run.pt (step 30)" in first
    before = (tmp_path / "run.pt").read_bytes()
    out = run("train_toy.py", "--steps", "60", "--seed", "2", "--resume", "run.pt", "--out", "b", cwd=tmp_path)
    assert out.splitlines()[0] == "resumed from run.pt at step 30"
    assert re.match(r"^step 36/60 \|", out.splitlines()[1])  # it goes on from step 31, not from the start
    assert final_line(out)[:2] == unbroken[:2]  # the same batches and the same state: the same final loss
    assert (tmp_path / "run.pt").read_bytes() == before  # resuming without --save leaves the checkpoint alone
    err = run("train_toy.py", "--steps", "60", "--seed", "2", "--lr", "0.01", "--resume", "run.pt", "--out", "b",
              cwd=tmp_path, expect=1)
    assert "--resume: run.pt was saved by a run with --lr 0.003 (now 0.01)" in err and "Traceback" not in err
    err = run("train_toy.py", "--steps", "20", "--seed", "2", "--resume", "run.pt", cwd=tmp_path, expect=1)
    assert "is at step 30, past --steps 20" in err
    err = run("train_toy.py", "--resume", "missing.pt", cwd=tmp_path, expect=2)
    assert "--resume: no checkpoint at missing.pt" in err


@pytest.mark.torch
def test_train_toy_checkpoint_is_read_by_torch(tmp_path):
    torch = pytest.importorskip("torch")
    run("train_toy.py", "--steps", "5", "--save", "run.pt", "--quiet", "--out", "b", cwd=tmp_path)
    checkpoint = torch.load(tmp_path / "run.pt", weights_only=True)
    assert checkpoint["step"] == 5 and checkpoint["options"]["task"] == "reverse"
    assert checkpoint["model"]["attn.in_proj_weight"].shape == (96, 32)
    assert checkpoint["optimizer"]["state"][0]["step"].item() == 5.0
    mha = torch.nn.MultiheadAttention(32, 2, batch_first=True)
    mha.load_state_dict({k.removeprefix("attn."): v for k, v in checkpoint["model"].items() if k.startswith("attn.")})


ADDER_FINAL = re.compile(r"^final: exact_match=(?P<match>[0-9.]+) time=(?P<time>[0-9.]+)s$")


def test_train_adder_short_run_prints_progress_and_draws(tmp_path):
    out = run("train_adder.py", "--steps", "30", "--attention", "composed", "--out", "figs", cwd=tmp_path)
    lines = out.strip().splitlines()
    for line in lines[:-2]:
        assert re.match(r"^step \d+/30 \| loss [0-9.]+ \| exact [0-9.]+ \| \d+ it/s$", line), line
    assert len(lines) == 12 and ADDER_FINAL.match(lines[-1]), lines[-1]
    for name in ("adder_curve.png", "adder_heads.png"):
        assert (tmp_path / "figs" / name).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_train_adder_defaults_learn_to_add_held_out_sums(tmp_path):
    import resource

    one_thread = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # one core's worth
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = run("train_adder.py", "--quiet", cwd=tmp_path, env=one_thread)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    match = ADDER_FINAL.match(out.strip().splitlines()[-1])
    assert match and float(match["match"]) >= 0.995, out
    # "within 2 minutes on one core": the CPU time the one-threaded run used, imports and figures included. Its
    # printed wall time also counts the waits for a core that other jobs on a busy machine hold.
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    assert cpu <= 120, f"{cpu:.0f} s of CPU time; {out}"


def test_train_adder_interrupted_then_resumed_ends_as_an_unbroken_run(tmp_path):
    import signal
    import time

    args = ["--steps", "120", "--seed", "1", "--batch-size", "8", "--out", "figs"]  # (small batches: quick steps)
    unbroken = run("train_adder.py", *args, cwd=tmp_path).strip().splitlines()
    script = os.path.join(ROOT, "examples", "train_adder.py")
    for _ in range(3):  # (on a loaded machine the Ctrl-C may land only after the run's end: then once more)
        (tmp_path / "run.pt").unlink(missing_ok=True)
        proc = subprocess.Popen([sys.executable, script, *args, "--save", "run.pt"], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                # (Ctrl-C's default action, even where the suite runs with SIGINT ignored: a
                                # background job of a script)
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 120
        while not (tmp_path / "run.pt").exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)  # Ctrl-C while training
        if "final:" not in proc.communicate(timeout=60)[0]:  # (interrupted before its end)
            break
    assert (tmp_path / "run.pt").exists() and not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    resumed = run("train_adder.py", *args, "--resume", "run.pt", cwd=tmp_path).strip().splitlines()
    step = int(re.match(r"resumed from run.pt at step (\d+)", resumed[0])[1])
    assert 12 <= step < 120
    progress = lambda lines: [re.sub(r" \| \d+ it/s$", "", line) for line in lines if line.startswith("step ")]  # noqa: E731
    later = [line for line in progress(unbroken) if int(line.split()[1].split("/")[0]) > step]
    assert progress(resumed) == later  # the same losses and matches from there on
    assert resumed[-1].split(" time=")[0] == unbroken[-1].split(" time=")[0]


def test_train_core_learns_to_reverse_with_the_core_alone(tmp_path):
    out = run("train_core.py", "--quiet", cwd=tmp_path)
    match = re.fullmatch(r"final loss (?P<loss>[0-9.]+), held-out accuracy (?P<acc>[0-9.]+)", out.strip())
    assert match, out
    assert float(match["acc"]) == 1.0 and float(match["loss"]) < 0.05  # (the README: seed 0, accuracy 1.000)
    assert float(run("train_core.py", "--quiet", "--steps", "5", cwd=tmp_path).split("accuracy ")[1]) < 0.5


def test_train_core_makes_only_the_cores_tensors_and_nodes():
    import importlib.util

    from tinyattn.autograd import core
    from tinyattn.autograd.core import grad_mode
    from tinyattn.autograd.core.function import Node, TensorBase

    spec = importlib.util.spec_from_file_location("train_core", os.path.join(ROOT, "examples", "train_core.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kinds = set()

    class Seen:
        def forward(self, node, args, output):
            kinds.update({type(node), type(output)} | {type(a) for a in args if isinstance(a, TensorBase)})

        def backward(self, node, grad_output, grad_inputs):
            kinds.add(type(node))

    previous = grad_mode.set_recorder(Seen())
    try:
        module.train(steps=3, seed=1, length=4, quiet=True)
    finally:
        grad_mode.set_recorder(previous)
    assert kinds == {core.Tensor, Node}
