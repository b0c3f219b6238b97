"""A dishonest student's submissions, each graded by the real run_autograder on a fake /autograder.

Every submission solves ``adam_step`` honestly and leaves ``log_softmax_backward`` blank;
the attack is the code in its ``softmax_backward`` region, which the grader runs first.
The attack's regions are graded under the ``open`` call policy, so that the code runs: these
attacks are on the sandbox, which must hold without the policy. Each must score exactly the
honest task's points (4), leave the results file as the grader wrote it, leave no process of
the student behind, and tell the instructor (the log) what
the code did. Attacks that need the student user (root, a Python it can run) run only where
it can be exercised (always in CI); the others run everywhere. One attack of each kind runs
with the README's test command; the rest are marked slow (CI runs them all).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import textwrap
import time

import numpy as np
import pytest

from tinyattn.homework import commands, confine
from tinyattn.homework.course import SHIPPED

from .gradescope_box import Box, require_fences, require_isolation, solved_student, student_processes, student_venv

TASKS = ["softmax_backward", "log_softmax_backward", "adam_step"]
SOFTMAX = os.path.join("tinyattn", "autograd", "core", "ops", "softmax.py")
STUB = 'raise NotImplementedError("task softmax_backward")'
LATER_STUB = 'raise NotImplementedError("task log_softmax_backward")'


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    """The attacks' regions under the ``open`` policy: these attacks are on the sandbox, which must hold
    without the call policy (``test_attacks_shortcuts.py`` attacks through the policy)."""
    out = tmp_path_factory.mktemp("attacks") / "hw"
    commands.assign(str(out), TASKS, {"softmax_backward": "open", "log_softmax_backward": "open"})
    return str(out)


def manifest(assignment):
    with open(os.path.join(assignment, "manifest.json")) as f:
        return json.load(f)


def plant(assignment, folder, code, later=None):
    """A submission: adam_step solved, the attack in softmax_backward's region, log_softmax_backward blank
    (or holding ``later``, the attack's second half)."""
    student = solved_student(assignment, os.path.join(folder, "work"), ["adam_step"])
    path = os.path.join(student, SOFTMAX)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for stub, region in ((LATER_STUB, later), (STUB, code)):  # (the attack may name the later stub)
        if region is not None:
            text = text.replace(stub, textwrap.indent(textwrap.dedent(region).strip(), " " * 8).lstrip())
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:  # (a lone surrogate: a raw byte)
        f.write(text)
    return student


def attack(assignment, code, *, isolated, timeout=30, later=None, without="", prefix=()):
    """Grade the attack through run_autograder; the results, the instructor's log and the box (``without``,
    ``prefix``: as ``Box.run``)."""
    venv = require_isolation() if isolated else student_venv()
    box = Box(os.path.join(assignment, "gradescope_autograder.zip"), venv)
    student = plant(assignment, box.root + "-work", code.replace("@ROOT@", box.root), later)
    shutil.copytree(os.path.join(student, "tinyattn"), os.path.join(box.submission, "tinyattn"))
    shutil.rmtree(box.root + "-work")
    try:
        # (an attack that needs no student user runs where there is none, graded unconfined, as told)
        results, log = box.run(timeout=timeout, without=without, prefix=prefix, unconfined=venv is None)
        time.sleep(0.3)  # anything the student left behind would write now
        assert box.results() == results, "results.json changed after the grader finished"
        return results, log, box
    finally:
        box.remove()


def earned(results, task):
    return sum(t["score"] for t in results["tests"] if t["tags"] == [task])


def assert_only_the_honest_task_scores(assignment, results, log=""):
    points = {t: info["points"] for t, info in manifest(assignment)["tasks"].items()}
    assert results["score"] == points["adam_step"] == earned(results, "adam_step"), log[-3000:]
    assert earned(results, "softmax_backward") == 0 and earned(results, "log_softmax_backward") == 0
    assert len(results["tests"]) == sum(len(info["tests"]) for info in manifest(assignment)["tasks"].values())
    for _ in range(20):  # a process SIGKILLed a moment ago may still be leaving /proc
        if not student_processes():
            break
        time.sleep(0.1)
    assert not student_processes(), "a process of the student user outlived the grading"
    assert not student_objects(), f"objects of the student user outlived the grading: {student_objects()}"


def student_objects():
    """System V IPC objects and entries in the shared folders that belong to the student user."""
    try:
        uid = __import__("pwd").getpwnam("tinyattn-student").pw_uid
    except KeyError:
        return []
    found = []
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}", encoding="utf-8") as f:
                header, *rows = [line.split() for line in f if line.strip()]
        except (OSError, ValueError):
            continue
        found += [f"{kind} {row[1]}" for row in rows if int(row[header.index("uid")]) == uid]
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        for entry in os.scandir(folder):
            try:
                if entry.stat(follow_symlinks=False).st_uid == uid:
                    found.append(entry.path)
            except OSError:
                pass
    return found


def student_visible(results):
    return "\n".join([results.get("output", "")] + [t["output"] for t in results["tests"]])


CONFIGURATIONS = ["", "namespaces", "network", "cgroup", "oom", "keyrings", "threads", ",".join(confine.FEATURES)]


@pytest.mark.parametrize("without", [
    pytest.param(w, marks=[pytest.mark.slow] if w else []) for w in CONFIGURATIONS])
def test_an_honest_full_solution_graded_as_the_student_user_scores_everything(assignment, tmp_path, without):
    """Behind every fence, and with each (and all) turned off, as on kernels that refuse them."""
    venv = require_isolation()
    require_fences(*[f for f in confine.FEATURES if f not in without.split(",")])
    box = Box(os.path.join(assignment, "gradescope_autograder.zip"), venv)
    try:
        student = solved_student(assignment, str(tmp_path / "work"), TASKS)
        shutil.copytree(os.path.join(student, "tinyattn"), os.path.join(box.submission, "tinyattn"))
        results, log = box.run(without=without)
    finally:
        box.remove()
    assert results["score"] == sum(info["points"] for info in manifest(assignment)["tasks"].values()) == 12
    assert all(t["status"] == "passed" for t in results["tests"])
    assert "the student's code runs as tinyattn-student" in log or without
    if without:
        said = "isolation reduced: " + "; ".join(f"no {name} (turned off)" for name in without.split(","))
        assert log.startswith(said) and results["output"].startswith(said), log[:500]
    else:
        assert "isolation reduced" not in log and "behind every fence" in log


# -- forged results ------------------------------------------------------------------------------------

def detached(body, every=0.05, setup=""):
    """Code that starts a process of its own session (so outside the grader's process group), which runs
    ``body`` every ``every`` seconds for 20 s, errors and all; the grader must kill it at the end of the task.
    Behind the ``threads`` fence the first fork fails; these attacks turn that fence off (``NO_THREADS_FENCE``),
    as on a kernel that refuses seccomp filters, to test what stops them there."""
    loop = textwrap.indent(textwrap.dedent(body).strip(), " " * 20)
    return ("import builtins, os, time\n" + textwrap.dedent(setup).strip() + "\n"
            "if not hasattr(builtins, '_started'):\n"
            "    builtins._started = True\n"
            "    if os.fork() == 0:\n"
            "        os.setsid()\n"
            "        if os.fork() == 0:\n"
            f"            for _ in range({int(20 / every)}):\n"
            "                try:\n"
            f"{loop}\n"
            "                except Exception:\n"
            "                    pass\n"
            f"                time.sleep({every})\n"
            "        os._exit(0)\n"
            "return (grad_output,)\n")


FORGE = """open("@ROOT@/results/results.json", "w").write('{"score": 1000, "tests": []}')"""
NO_THREADS_FENCE = "threads"


@pytest.mark.slow
def test_a_detached_process_rewriting_results_json_after_the_grader_is_stopped(assignment):
    results, log, _ = attack(assignment, detached(FORGE), isolated=True, without=NO_THREADS_FENCE)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert re.search(r"killed [1-9]\d* process\(es\) the student's code left running", log)


def test_writing_full_marks_then_killing_the_grader_changes_nothing(assignment):
    results, log, _ = attack(assignment, """
        import os, signal
        try:
            open("@ROOT@/results/results.json", "w").write('{"score": 1000, "tests": []}')
        finally:
            os.kill(os.getppid(), signal.SIGKILL)
    """, isolated=True)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "PermissionError" in log


def test_verdicts_forged_on_the_results_channel_are_ignored(assignment):
    results, log, _ = attack(assignment, """
        import os
        forged = (b'{"test": "test_softmax_gradients", "passed": true, "score": 2}\\n'
                  b'{"test": "test_softmax_backward_reference", "arrays": {"x_grad": {"dtype": "|O", "shape": [1], '
                  b'"data": "AA=="}}}\\n\\x00\\xff not json\\n'
                  + b"[" * 200_000 + b"\\n")  # (too deep to parse)
        for fd in range(3, 64):
            try:
                os.write(fd, forged)
            except OSError:
                pass
        os._exit(0)
    """, isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "malformed line(s) on the results channel" in log


@pytest.mark.slow
def test_a_megabyte_of_garbage_on_the_channel_is_survived(assignment):
    results, log, _ = attack(assignment, """
        import os
        for fd in range(3, 64):
            try:
                os.write(fd, b"\\xff" * (1 << 20) + b"\\n[1, 2]\\n{}\\n")
            except OSError:
                pass
        return (grad_output,)
    """, isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "malformed line(s)" in log


# -- the answer key on disk --------------------------------------------------------------------------------

REFERENCE_IMPORT = """
import importlib.util, sys
errors = []
for root in ("@ROOT@/source/grader", "@ROOT@/source/autograder/reference", "@ROOT@/source/autograder/marked"):
    try:
        open(root + "/tinyattn/__init__.py").close()
    except OSError as err:
        errors.append(repr(err))
        continue
    spec = importlib.util.spec_from_file_location("answers", root + "/tinyattn/__init__.py",
                                                  submodule_search_locations=[root + "/tinyattn"])
    answers = importlib.util.module_from_spec(spec)
    sys.modules["answers"] = answers
    spec.loader.exec_module(answers)
    from answers.autograd.core.ops.softmax import Softmax as Reference
    return Reference.backward(ctx, grad_output)
raise PermissionError("; ".join(errors))
"""


def test_importing_the_grader_s_own_reference_is_refused_to_the_student_user(assignment, tmp_path):
    results, log, _ = attack(assignment, REFERENCE_IMPORT, isolated=True)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "Permission denied" in log
    # the same submission graded with the student's code running as root does take the answers
    box = Box(os.path.join(assignment, "gradescope_autograder.zip"), None)
    try:
        student = plant(assignment, str(tmp_path / "work"), REFERENCE_IMPORT.replace("@ROOT@", box.root))
        unprotected, _ = commands.grade(student, os.path.join(box.root, "source", "autograder"), unconfined=True)
    finally:
        box.remove()
    assert earned(unprotected, "softmax_backward") == manifest(assignment)["tasks"]["softmax_backward"]["points"]


@pytest.mark.slow
def test_rewriting_the_judges_where_they_lie_is_refused(assignment):
    results, log, _ = attack(assignment, """
        import os
        done = []
        for here, dirs, files in os.walk("@ROOT@"):
            for name in files:
                if name in ("judges.py", "probes.py", "runner.py", "manifest.json"):
                    try:
                        with open(os.path.join(here, name), "a") as f:
                            f.write("\\ndef judge(*args, **kwargs):\\n    pass\\n")
                        done.append("rewrote " + name)
                    except OSError as err:
                        done.append(repr(err))
        raise RuntimeError("; ".join(done) or "found no judge (the folders could not be listed)")
    """, isolated=True)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "found no judge" in log and "rewrote" not in log


def _recorded_answers(seed):
    """What softmax's backward returned, keyed by its upstream gradient, in the reference's run of its probes."""
    from tinyattn.autograd.core.ops.softmax import Softmax
    from tinyattn.homework.grading import Reference

    table, real = {}, Softmax.backward

    def recording(ctx, grad_output):
        out = real(ctx, grad_output)
        key = np.ascontiguousarray(grad_output).tobytes() + np.ascontiguousarray(ctx.saved_tensors[0]).tobytes()
        table[hashlib.sha256(key).hexdigest()] = out[0].tolist()
        return out

    Softmax.backward = staticmethod(recording)
    try:
        reference = Reference(SHIPPED)
        for test in manifest_tests("softmax_backward"):
            reference.values(test, seed)
    finally:
        Softmax.backward = staticmethod(real)
    return table


def manifest_tests(task):
    return [t.name for t in commands.scan_tests(SHIPPED) if t.task == task]


@pytest.mark.slow
def test_answers_recorded_for_one_seed_are_worthless_under_the_next(assignment, tmp_path):
    table = _recorded_answers(seed=commands.task_seed(1234, "softmax_backward"))
    code = f"""
        import hashlib
        TABLE = {table!r}
        key = np.ascontiguousarray(grad_output).tobytes() + np.ascontiguousarray(ctx.saved_tensors[0]).tobytes()
        key = hashlib.sha256(key).hexdigest()
        if key not in TABLE:
            raise LookupError("no recorded answer for this input")
        return (np.array(TABLE[key]),)
    """
    student = plant(assignment, str(tmp_path / "work"), code)
    replay, _ = commands.grade(student, os.path.join(assignment, "autograder"), seed=1234, unconfined=True)
    assert earned(replay, "softmax_backward") == manifest(assignment)["tasks"]["softmax_backward"]["points"]
    results, log, _ = attack(assignment, code, isolated=False)  # each grading draws its own seed
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "LookupError: no recorded answer" in log


# -- patching the judge in the student's process ---------------------------------------------------------


def test_patching_numpy_s_comparisons_in_the_student_s_process_changes_no_verdict(assignment):
    results, log, _ = attack(assignment, """
        import numpy.testing
        np.allclose = lambda *args, **kwargs: True
        np.isclose = lambda a, b, *args, **kwargs: np.ones(np.broadcast(a, b).shape, dtype=bool)
        np.array_equal = lambda *args, **kwargs: True
        numpy.testing.assert_allclose = lambda *args, **kwargs: None
        return (np.zeros_like(grad_output),)
    """, isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "values differ from the reference" in log


@pytest.mark.slow
def test_the_stack_holds_no_expected_values_to_copy(assignment):
    results, log, _ = attack(assignment, """
        import sys
        frame, found = sys._getframe(1), []
        while frame is not None:
            found += [v for v in frame.f_locals.values() if isinstance(v, np.ndarray) and v.shape == grad_output.shape
                      and v is not grad_output]
            frame = frame.f_back
        if not found:
            raise LookupError("no array of the right shape on the stack")
        return (found[-1],)
    """, isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "LookupError: no array of the right shape on the stack" in log


@pytest.mark.slow
def test_replacing_the_probe_s_checks_with_pytest_hooks_finds_no_pytest(assignment):
    results, log, _ = attack(assignment, """
        import sys
        names = sorted(m for m in sys.modules if m.split(".")[0] in ("pytest", "_pytest", "conftest", "judges"))
        raise ImportError("nothing to patch: " + (", ".join(names) or "no pytest, conftest or judges loaded"))
    """, isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "no pytest, conftest or judges loaded" in log


# -- shared state between tasks ----------------------------------------------------------------------------

READ_THE_REFERENCE = """
with open(__file__) as f:
    mine = f.read()  # in this task's package, log_softmax's region holds the reference's code
body = mine.split("class LogSoftmax")[-1].split("def backward(")[1].split(":\\n", 1)[1].split("\\n\\n")[0]
stub = 'raise NotImplementedError("task log_softmax_backward")'
"""

TAKE_OVER = """
import glob
for path in glob.glob("/tmp/tinyattn-task-*/package/tinyattn/autograd/core/ops/softmax.py"):
    with open(path) as f:
        theirs = f.read()
    if stub in theirs:
        with open(path, "w") as f:
            f.write(theirs.replace("        " + stub, body.strip("\\n")))
"""


@pytest.mark.slow
def test_a_task_s_process_cannot_rewrite_a_later_task_s_package(assignment):
    results, log, _ = attack(assignment, detached(TAKE_OVER, every=0.001, setup=READ_THE_REFERENCE), isolated=True,
                             without=NO_THREADS_FENCE)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert re.search(r"killed [1-9]\d* process\(es\) the student's code left running", log)


STASH = READ_THE_REFERENCE + """
for folder in ("/tmp", "/var/tmp", "/dev/shm"):
    try:
        with open(folder + "/tinyattn-stash.txt", "w") as f:
            f.write(body)
    except OSError:
        pass
return (grad_output,)
"""

UNSTASH = """
import textwrap
body = None
for folder in ("/tmp", "/var/tmp", "/dev/shm"):
    try:
        with open(folder + "/tinyattn-stash.txt") as f:
            body = f.read()
        break
    except OSError:
        pass
if body is None:
    raise FileNotFoundError("no stash left by the previous task")
namespace = {"ctx": ctx, "grad_output": grad_output, "np": np}
exec("def stashed():\\n" + textwrap.indent(textwrap.dedent(body), "    "), namespace)
return namespace["stashed"]()
"""


@pytest.mark.parametrize("without", ["", "namespaces"])
def test_another_task_s_reference_stashed_in_tmp_is_gone_before_that_task_runs(assignment, without):
    """In a fresh /tmp of the task's own (a mount namespace), or deleted from the shared one after the task."""
    if not without:
        require_fences("namespaces", "cgroup", "oom", "keyrings")
    results, log, _ = attack(assignment, STASH, later=UNSTASH, isolated=True, without=without)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "FileNotFoundError: no stash left by the previous task" in log
    if without:
        assert log.startswith("isolation reduced: no namespaces (turned off)")
        assert re.search(r"deleted [1-9]\d* file\(s\) or IPC object\(s\)", log)
    else:
        assert "behind every fence" in log and "deleted" not in log


@pytest.mark.slow
def test_code_planted_for_later_python_processes_never_runs(assignment):
    marker = f"/tmp/tinyattn-attack-ran-{os.getpid()}"
    results, log, _ = attack(assignment, f"""
        import os, sysconfig
        payload = "import os; open({marker!r}, 'w').write('ran')\\n"
        wrote = []
        for folder in {{sysconfig.get_paths()["purelib"], os.path.dirname(os.path.dirname(np.__file__)),
                       os.path.dirname(os.path.dirname(os.path.dirname(__file__)))}}:
            for name, text in (("zz_attack.pth", payload), ("sitecustomize.py", payload[:-1].split("; ", 1)[1])):
                try:
                    with open(os.path.join(folder, name), "w") as f:
                        f.write(text)
                    wrote.append(os.path.join(folder, name))
                except OSError as err:
                    wrote.append(repr(err))
        raise RuntimeError("; ".join(wrote))
    """, isolated=True)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "Permission denied" in log and not os.path.exists(marker)
    venv = student_venv()
    site = [os.path.join(here, n) for here, _, names in os.walk(venv) for n in names if n in ("zz_attack.pth",)]
    assert not site


# -- denial -------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_killing_every_process_in_sight_costs_only_the_attacker(assignment):
    results, log, _ = attack(assignment, """
        import os, signal
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) not in (os.getpid(), 1):
                try:
                    os.kill(int(name), signal.SIGKILL)
                except OSError:
                    pass
        raise ProcessLookupError("tried to kill every process")
    """, isolated=True)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "ProcessLookupError: tried to kill every process" in log


@pytest.mark.slow  # 7 s: the grader drains all 700 MB, keeping 64 KiB
def test_seven_hundred_megabytes_of_output_are_capped(assignment):
    results, log, _ = attack(assignment, """
        import os
        chunk = b"x" * (1 << 20)
        for _ in range(700):
            os.write(1, chunk)
        return (grad_output,)
    """, isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "x" * 1000 in log and len(log) < 1_000_000
    assert "xxxx" not in student_visible(results)


@pytest.mark.slow  # 7 s: it runs until the task's time limit
def test_a_fork_bomb_is_bounded_and_killed(assignment):
    results, log, _ = attack(assignment, """
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """, isolated=True, timeout=6, without=NO_THREADS_FENCE)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "ran past the time limit of 6 s" in log and "process(es) the student's code left running" in log, log[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("without", [NO_THREADS_FENCE, ""], ids=["threads fence off", "every fence"])
def test_a_detached_sleeper_does_not_outlive_its_task(assignment, without):
    """Without the threads fence, the grader kills the process the task's code left; behind it, the code cannot
    start one."""
    results, log, _ = attack(assignment, detached("pass"), isolated=True, without=without)
    assert_only_the_honest_task_scores(assignment, results, log)
    killed = re.search(r"killed [1-9]\d* process\(es\) the student's code left running", log)
    assert killed if without else not killed and "PermissionError: [Errno 1] Operation not permitted" in log


def test_asking_for_sixteen_gigabytes_fails_only_the_attacker(assignment):
    results, log, _ = attack(assignment, "return (np.ones(1 << 31),)", isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "MemoryError" in log


@pytest.mark.slow
def test_filling_the_disk_is_stopped_at_the_file_size_limit(assignment):
    results, log, _ = attack(assignment, """
        with open("big.bin", "wb") as f:
            for _ in range(1024):
                f.write(b"\\0" * (1 << 20))
        return (grad_output,)
    """, isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "File too large" in log  # (Python ignores SIGXFSZ, so the write fails instead)


# -- leaks through feedback ------------------------------------------------------------------------------


def _reference_lines():
    files, regions, _, _ = commands.load(TASKS)
    return [line.strip() for r in regions["log_softmax_backward"] for line in files[r.path][r.begin + 1:r.end]
            if len(line.strip()) >= 8]


def test_another_task_s_reference_code_raised_as_an_error_is_not_shown_to_the_student(assignment):
    results, log, _ = attack(assignment, """
        with open(__file__) as f:
            raise ValueError(f.read().split("class LogSoftmax")[-1])
    """, isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    visible = student_visible(results)
    lines = _reference_lines()
    assert lines and not any(line in visible for line in lines)
    assert "[reference code removed]" in visible or "more characters" in visible
    assert all(line in log for line in lines)  # the instructor sees everything


@pytest.mark.slow
@pytest.mark.slow
def test_reference_code_in_a_forged_error_s_type_and_frames_is_not_shown_either(assignment):
    results, log, _ = attack(assignment, """
        import json, os
        with open(__file__) as f:
            secret = f.read().split("class LogSoftmax")[-1]
        for test in ("test_softmax_gradients", "test_softmax_backward_reference"):
            line = json.dumps({"test": test, "error": {"type": secret, "message": "",
                                                       "frames": [[secret, 1, secret]] * 8}}) + "\\n"
            for fd in range(3, 64):
                try:
                    os.write(fd, line.encode())
                except OSError:
                    pass
        os._exit(0)
    """, isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    visible = student_visible(results)
    assert not any(line in visible for line in _reference_lines())
    assert all(len(t["output"]) < 2000 for t in results["tests"])


def test_the_child_holds_no_other_task_s_probes_and_shows_no_hidden_probe(assignment):
    results, log, _ = attack(assignment, """
        import sys
        with open(sys.modules["probes"].__file__) as f:
            raise ValueError("@task(" + f.read().split("\\n@task(", 1)[1])  # the graded probes it was given
    """, isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "def test_softmax_backward_reference" in log  # its own task's probes, hidden one included, it has
    assert "test_adam_step_reference" not in log and "test_mha_gradients" not in log  # no other task's
    assert "test_softmax_backward_reference" not in student_visible(results).split("Task ")[0]
    assert "def test_softmax_backward_reference" not in student_visible(results)


def test_reference_code_printed_to_stdout_reaches_only_the_instructor(assignment):
    results, log, _ = attack(assignment, """
        with open(__file__) as f:
            print(f.read())
        return (grad_output,)
    """, isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    lines = _reference_lines()
    assert not any(line in student_visible(results) for line in lines)
    assert all(line in log for line in lines)


@pytest.mark.slow
def test_a_megabyte_long_error_message_is_cut_short(assignment):
    results, log, _ = attack(assignment, 'raise ValueError("A" * 1_000_000)', isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    for t in results["tests"]:
        assert len(t["output"]) < 2000
    assert any("more characters" in t["output"] for t in results["tests"] if t["tags"] == ["softmax_backward"])
    assert "A" * 3000 in log  # the instructor gets the message


# -- the grader's own robustness ---------------------------------------------------------------------------


@pytest.mark.slow
def test_bytes_that_are_not_utf8_in_a_task_file_fail_only_that_task(assignment):
    results, log, _ = attack(assignment, 'return (grad_output,)  # \udcff', isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "values differ from the reference" in log


@pytest.mark.skipif(sys.platform != "linux", reason="/proc")
def test_results_json_exists_while_grading_and_when_the_grader_itself_fails(assignment, tmp_path, monkeypatch):
    from tinyattn.homework import grading
    from tinyattn.homework.__main__ import main

    student = solved_student(assignment, str(tmp_path / "work"), TASKS)
    path = tmp_path / "results.json"
    seen = []
    real = grading.run_graded

    def failing(write, tests, *args, **kwargs):
        seen.append(json.loads(path.read_text()))  # the file before each task
        if tests[0].task == "adam_step":
            raise RuntimeError("the grader broke")
        return real(write, tests, *args, **kwargs)

    monkeypatch.setattr(commands, "run_graded", failing)
    assert main(["grade", student, "--autograder", os.path.join(assignment, "autograder"), "--json", str(path),
                 "--gradescope", "--unconfined"]) == 0
    assert [earned(r, "softmax_backward") for r in seen] == [0, 4, 4]  # partial results, task by task
    final = json.loads(path.read_text())
    assert earned(final, "softmax_backward") == 4 and earned(final, "log_softmax_backward") == 4
    assert earned(final, "adam_step") == 0
    assert all("the grader failed (RuntimeError)" in t["output"] for t in final["tests"] if t["tags"] == ["adam_step"])
