"""Shortcut solutions: a backward task answered without deriving it, graded through run_autograder.

Each attack is a *correct* answer obtained the wrong way: numerical differentiation through a
forward (central differences, the complex step), or another part of the package computing the
gradient (an op's own forward, autograd). Under the default policy for backward tasks
(``derive``) each earns nothing, and the student's feedback says why; under ``open`` the same
code earns the task's points, which shows the attack is real. The policy never refuses the
honest code: the reference and every common mistake pass it (check 6 of ``homework check``,
and ``test_policy.py``).
"""

from __future__ import annotations

import json
import os

import pytest

from tinyattn.homework import commands

from .test_attacks import assert_only_the_honest_task_scores, attack, earned, student_visible

TASKS = ["softmax_backward", "log_softmax_backward", "adam_step"]

# Central differences through the op's own forward, in float64: right to about 1e-10
THROUGH_THE_FORWARD = """
(y,) = ctx.saved_tensors
x = np.log(np.maximum(y, 1e-300))  # (a softmax's input, up to a constant per row)
grad, h = np.zeros_like(x), 1e-6
for i in np.ndindex(x.shape):
    up, down = x.copy(), x.copy()
    up[i] += h
    down[i] -= h
    grad[i] = (grad_output * (Softmax.forward(Context(), up, dim=ctx.dim)
                              - Softmax.forward(Context(), down, dim=ctx.dim))).sum() / (2 * h)
return (grad,)
"""

# The complex step through a forward written out: exact to rounding, and no call into the package
COMPLEX_STEP = """
(y,) = ctx.saved_tensors
x = np.log(np.maximum(y, 1e-300))
def softmax(z):
    e = np.exp(z - z.real.max(axis=ctx.dim, keepdims=True))
    return e / e.sum(axis=ctx.dim, keepdims=True)
grad = np.zeros_like(x)
for i in np.ndindex(x.shape):
    z = x.astype(np.complex128)
    z[i] += 1e-30j
    grad[i] = (grad_output * softmax(z).imag).sum() / 1e-30
return (grad,)
"""

# Central differences through a forward written out: nothing the code check can name; the large input's
# budget stops it
WRITTEN_OUT = """
(y,) = ctx.saved_tensors
x = np.log(np.maximum(y, 1e-300))
def softmax(z):
    e = np.exp(z - z.max(axis=ctx.dim, keepdims=True))
    return e / e.sum(axis=ctx.dim, keepdims=True)
grad, h = np.zeros_like(x), 1e-6
flat = grad.reshape(-1)
for i in range(x.size):
    up, down = x.copy().reshape(-1), x.copy().reshape(-1)
    up[i] += h
    down[i] -= h
    flat[i] = (grad_output * (softmax(up.reshape(x.shape)) - softmax(down.reshape(x.shape)))).sum() / (2 * h)
return (grad,)
"""

# The same, with the child's own alarm switched off first (under a policy that allows imports)
ALARM_OFF = """
import signal
signal.signal(signal.SIGPROF, signal.SIG_IGN)
signal.setitimer(signal.ITIMER_PROF, 0)
""" + WRITTEN_OUT

# Autograd through the package's other ops
AUTOGRAD = """
import tinyattn
(y,) = ctx.saved_tensors
x = tinyattn.tensor(np.log(np.maximum(y, 1e-300)), requires_grad=True)
(x.exp() / x.exp().sum(dim=ctx.dim, keepdim=True)).backward(tinyattn.tensor(grad_output))
return (x.grad.numpy(),)
"""


# The complex step along dY: softmax's Jacobian is symmetric, so one complex forward gives J dY exactly, in
# milliseconds on the large input too. Exact, so no precision tells it from a derivation: only the code check
# finds it
COMPLEX_ALONG_DY = """
(y,) = ctx.saved_tensors
x = np.log(np.maximum(y, 1e-300))
z = x + 1e-30j * grad_output
e = np.exp(z - x.max(axis=ctx.dim, keepdims=True))
return ((e / e.sum(axis=ctx.dim, keepdims=True)).imag / 1e-30,)
"""


def _assignment(tmp_path_factory, name, policies=None, edit=None, on_flag=None):
    out = tmp_path_factory.mktemp(name) / "hw"
    commands.assign(str(out), TASKS, policies, on_flag=on_flag)
    if edit is not None:  # an instructor's own policy, written into the manifest, and the zip made again
        path = out / "autograder" / "manifest.json"
        data = json.loads(path.read_text())
        edit(data)
        path.write_text(json.dumps(data, indent=2))
        commands.gradescope_zip(str(out / "autograder"), str(out / "gradescope_autograder.zip"))
    return str(out)


@pytest.fixture(scope="module")
def derive(tmp_path_factory):
    """softmax_backward under ``derive``, its course setting aside the points of flagged code until reviewed
    (``on_flag = "withhold"``): what a mechanism stops earns nothing under either setting, and what only the
    code check finds earns nothing here, flagged with its evidence."""
    return _assignment(tmp_path_factory, "derive", on_flag="withhold")


@pytest.fixture(scope="module")
def derive_review(tmp_path_factory):
    """The default assignment: softmax_backward under ``derive``, flagged code keeping its points for review."""
    return _assignment(tmp_path_factory, "review")


@pytest.fixture(scope="module")
def open_policy(tmp_path_factory):
    """softmax_backward under ``open``: what the attacks earn without a policy."""
    return _assignment(tmp_path_factory, "open", {"softmax_backward": "open"})


@pytest.mark.parametrize("code, found, mechanism", [
    pytest.param(THROUGH_THE_FORWARD, "the attribute .forward", "PolicyError: the task's code called forward",
                 marks=pytest.mark.slow),
    (COMPLEX_ALONG_DY, "the complex number 1e-30j", ""),
    pytest.param(AUTOGRAD, "an import", "PolicyError: the task's code called", marks=pytest.mark.slow),
], ids=["central differences through the op's forward", "complex step", "autograd through other ops"])
def test_a_shortcut_the_code_check_names_is_flagged_and_earns_nothing_where_flags_withhold(derive, code, found,
                                                                                            mechanism):
    """Calls into the package are stopped while the code runs (the run-time watch: a mechanism); the complex step
    is exact, so no precision tells it from a derivation: the code check's finding flags it, and this course sets
    flagged points aside until reviewed."""
    results, log, _ = attack(derive, code, isolated=True)
    assert_only_the_honest_task_scores(derive, results, log)
    assert f"softmax_backward: flagged (derive): {found}" in log, log[-3000:]
    assert commands.WITHHELD in student_visible(results) and found in student_visible(results)
    assert [f["task"] for f in results["extra_data"]["flags"]] and \
        {f["task"] for f in results["extra_data"]["flags"]} == {"softmax_backward"}
    if mechanism:
        assert mechanism in log and "refused by the task's policy" in student_visible(results)


def test_a_flag_keeps_the_points_for_review_by_default(derive_review):
    """The complex step along dY, under the default ``on_flag = "review"``: the points stay, and the flags with
    their evidence (file, line, rule, code) go to the instructor and the student."""
    results, log, _ = attack(derive_review, COMPLEX_ALONG_DY, isolated=True)
    points = {t: info["points"] for t, info in _manifest(derive_review)["tasks"].items()}
    assert earned(results, "softmax_backward") == points["softmax_backward"], log[-3000:]
    flags = results["extra_data"]["flags"]
    # (the lines of the task's code as handed in: the stub's TODO comment first)
    assert {(f["task"], f["rule"], f["line"]) for f in flags} == {("softmax_backward", "derive", 4),
                                                                  ("softmax_backward", "derive", 6)}, flags
    complex_number = next(f for f in flags if f["line"] == 4)
    assert complex_number["file"].endswith("softmax.py") and "1e-30j" in complex_number["code"]
    assert complex_number["what"] == "the complex number 1e-30j"
    assert "Flagged for your instructor's review (softmax_backward)" in student_visible(results)
    assert "the points are kept" in student_visible(results)


def _manifest(assignment):
    return json.loads(open(os.path.join(assignment, "manifest.json")).read())


@pytest.mark.slow
@pytest.mark.parametrize("code", [THROUGH_THE_FORWARD, COMPLEX_STEP, AUTOGRAD],
                         ids=["central differences through the op's forward", "complex step",
                              "autograd through other ops"])
def test_without_a_policy_the_same_shortcut_passes_the_tests_of_the_task(open_policy, code):
    """(Those whose inputs are small: on the hidden probe's large input, differentiating numerically runs out of
    time, policy or not; with a task time of 20 s, the large input's budget is 10 s.)"""
    results, log, _ = attack(open_policy, code, isolated=True, timeout=20)
    passed = {t["name"] for t in results["tests"] if t["status"] == "passed"}
    assert "softmax_backward: test_softmax_gradients" in passed, log[-3000:]
    assert earned(results, "softmax_backward") > 0
    if code is not AUTOGRAD:  # (the runner lowered the budget to half the task's CPU time, 21 s)
        assert "took more than 10.5 s of CPU time on a large input" in log, log[-3000:]


@pytest.mark.slow  # 5 s: the large input's budget
def test_numerical_differentiation_through_a_written_out_forward_runs_out_of_its_budget(derive):
    results, log, _ = attack(derive, WRITTEN_OUT, isolated=True, timeout=60)
    assert_only_the_honest_task_scores(derive, results, log)
    assert "took more than 30 s of CPU time on a large input" in log
    assert "refused by the task's policy" in student_visible(results)


@pytest.fixture(scope="module")
def calls_only(tmp_path_factory):
    """An instructor's policy that names no attribute: only the run-time watch of calls into the package."""
    def edit(data):
        data["tasks"]["softmax_backward"]["policy"] = {"imports": False, "calls": []}
    return _assignment(tmp_path_factory, "calls", edit=edit)


@pytest.mark.slow
def test_a_call_into_the_package_that_the_code_check_lets_through_is_refused_at_run_time(calls_only):
    results, log, _ = attack(calls_only, THROUGH_THE_FORWARD, isolated=True, timeout=20)  # (a 10 s budget)
    assert_only_the_honest_task_scores(calls_only, results, log)
    assert "PolicyError: the task's code called " in log and "forward (tinyattn/autograd/core/ops/softmax.py)" in log
    assert "refused by the task's policy" in student_visible(results)


@pytest.fixture(scope="module")
def imports_allowed(tmp_path_factory):
    """An instructor's policy that allows imports but not differentiating numerically."""
    def edit(data):
        data["tasks"]["softmax_backward"]["policy"] = {"numerical": False}
    return _assignment(tmp_path_factory, "imports", edit=edit)


@pytest.mark.slow  # (a minute: the child runs until the grader stops it at its CPU time)
def test_numerical_differentiation_with_the_child_s_alarm_off_is_stopped_from_outside(imports_allowed):
    """The child's own budget is a timer the code can switch off; then, without the grader's watch of the child's
    CPU time, the small probes pass numerically and the large one runs until the clock stops it: half the task's
    points. The grader stops the child at policy.DERIVED_CPU of CPU time, from outside: the task earns nothing."""
    results, log, _ = attack(imports_allowed, ALARM_OFF, isolated=True, timeout=150)
    assert_only_the_honest_task_scores(imports_allowed, results, log)
    assert "the student's process ran past the CPU limit of 60 s" in log
    assert "refused by the task's policy" in student_visible(results)
    assert "ran past the CPU limit of 60 s" in student_visible(results)


# The probes run again by the task's code (an honest backward cannot pass the run-time watch, so it computes the
# gradient by autograd): their results, right ones, written on the channel before the runner sends its refusal
FORGED_FIRST = """
import json, os, sys
import tinyattn
probes, runner = sys.modules["probes"], sys.modules["__main__"]
frame, seed = sys._getframe(), None
while frame is not None:  # the seed the runner called the probe with
    if isinstance(frame.f_locals.get("seed"), int):
        seed = frame.f_locals["seed"]
    frame = frame.f_back
if not getattr(probes, "forging", False):
    probes.forging = True
    for name in ("test_softmax_gradients", "test_softmax_backward_reference"):
        try:  # (the watch raises at the first call it refuses: carry on without it)
            arrays = getattr(probes, name)(seed)
        except BaseException:
            continue
        line = json.dumps({"test": name, "arrays": {k: runner._encode(v) for k, v in arrays.items()}}) + "\\n"
        for fd in range(3, 64):  # (the channel is one of them)
            try:
                os.write(fd, line.encode())
            except OSError:
                pass
    probes.forging = False
(y,) = ctx.saved_tensors
x = tinyattn.tensor(np.log(np.maximum(y, 1e-300)), requires_grad=True)
(x.exp() / x.exp().sum(dim=ctx.dim, keepdim=True)).backward(tinyattn.tensor(grad_output))
return (x.grad.numpy(),)
"""


@pytest.fixture(scope="module")
def watched_calls(tmp_path_factory):
    """An instructor's policy that allows imports and watches the calls into the package at run time."""
    def edit(data):
        data["tasks"]["softmax_backward"]["policy"] = {"calls": []}
    return _assignment(tmp_path_factory, "watched", edit=edit)


def test_results_written_on_the_channel_before_the_runner_s_refusal_earn_nothing(watched_calls):
    """The runner sends one result per test; the grader counted the first that came. Right results written first
    by the task's code, then the runner's refusal: the task's 4 points before. A test with more than one result
    keeps the refusal; and the probes the code runs again to forge them now stop at their first refused call, so
    none is even written (the refusal stands though the code catches it): the task earns nothing."""
    results, log, _ = attack(watched_calls, FORGED_FIRST, isolated=True, timeout=60)
    assert_only_the_honest_task_scores(watched_calls, results, log)
    assert "PolicyError: the task's code called " in log
    assert "refused by the task's policy" in student_visible(results)


# Autograd through the package's other ops, in a thread of the task's own: the runner's watch of the calls the
# task's lines make is a profile hook, and a profile hook watches the thread that set it
IN_A_THREAD = """
import threading
import tinyattn
(y,) = ctx.saved_tensors
found = {}
def differentiate():
    x = tinyattn.tensor(np.log(np.maximum(y, 1e-300)), requires_grad=True)
    (x.exp() / x.exp().sum(dim=ctx.dim, keepdim=True)).backward(tinyattn.tensor(grad_output))
    found["grad"] = x.grad.numpy()
worker = threading.Thread(target=differentiate)
worker.start()
worker.join()
return (found["grad"],)
"""


@pytest.mark.slow
@pytest.mark.parametrize("without, earns", [("", False), ("threads", True)], ids=["fenced", "threads allowed"])
def test_autograd_in_a_thread_of_the_task_s_own_earns_nothing(watched_calls, without, earns):
    """The same autograd in the task's own thread is not seen by the watch: with threads allowed (the fence turned
    off) it earns the task's points. With the fence, the child can start no thread (a seccomp filter set before the
    runner starts, which nothing inside can remove): the task earns nothing."""
    results, log, _ = attack(watched_calls, IN_A_THREAD, isolated=True, timeout=60, without=without)
    if earns:
        assert earned(results, "softmax_backward") > 0, log[-3000:]
        return
    assert_only_the_honest_task_scores(watched_calls, results, log)
    assert "can't start new thread" in log
