"""Where a student's code runs when it is graded: a child process that can only send data back.

**What the child is.** ``python -I runner.py`` in a fresh folder built for one task and
removed after it: the package under test, the probes, and a writable home. It gets a bare
environment (no paths of the grader's), its limits (CPU time, address space, file size,
processes) set before any of the student's code is imported, and one pipe to send
results on. Its stdout and stderr are kept up to a cap, for the instructor only.

**Who the child is.** When the grader runs as root (Gradescope does), the child runs as
``tinyattn-student``, a user with no home and no login, created on first use. It cannot
read what the grader keeps private (``run_autograder`` makes those folders 0700) nor write
anything of the grader's. At the end of each task every process of that user is killed,
including any that detached themselves, and what it left in the folders every user may
write is deleted. Not as root, the child runs as the grader's own user: grading works, the
grader still kills what the child left running (it adopts it, as Linux's child subreaper),
and ``Isolation.note`` says what is lost.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import pwd
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from . import confine, trees, untrusted

STUDENT_USER = "tinyattn-student"
# Folders every user may write: what the student user leaves there is deleted after each task, so that
# nothing one task's code stashes (say, another task's reference code from its package) reaches the next
SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run/lock", "/var/lock")


@dataclass
class Limits:
    """Per task: wall-clock seconds (CPU seconds too), bytes of memory, of any file, of output kept."""

    seconds: float = 300.0
    memory: int = 1 << 30  # per process: with ``processes``, at most 8 GiB for one task's code in all
    file_size: int = 16 << 20
    processes: int = 8  # processes of the student user; as the grader's own user, this many more than it has
    output: int = 64 << 10
    channel: int = 64 << 20
    cpu: float | None = None  # CPU seconds the child may use in all, watched from outside (None: ``seconds``)

    def cpu_seconds(self) -> float:
        """The CPU time the child may use: ``cpu``, else as many seconds as the clock allows it."""
        return self.seconds if self.cpu is None else self.cpu

    def rlimits(self, as_student: bool) -> dict[str, int]:
        """The ``resource`` limits the runner sets on itself before importing the student's code."""
        processes = self.processes if as_student else len(_processes_of(os.getuid())) + self.processes
        return {"RLIMIT_CPU": int(self.cpu_seconds()) + 1, "RLIMIT_AS": self.memory, "RLIMIT_FSIZE": self.file_size,
                "RLIMIT_CORE": 0, "RLIMIT_NPROC": processes}


@dataclass
class Isolation:
    """Who the student's code runs as: ``uid``/``gid`` of the student user, or None (the grader's own).

    ``reap``: the grader adopts every process the child leaves (Linux's child subreaper), and
    kills them all at the end of each task, whoever they run as. Only for a grader that runs
    one child at a time (``grade``), since it kills every orphan it adopted.
    """

    uid: int | None = None
    gid: int | None = None
    note: str = ""  # why isolation is reduced, for the instructor; "" when it is not
    reap: bool = False
    fences: confine.Fences | None = None  # the kernel's fences around each child (root only)


def child_python() -> str:
    """The interpreter for the child: this one, named through its environment's real folder (not a link)."""
    if sys.prefix != sys.base_prefix:  # a venv: keep its bin/python so its site-packages come along
        return os.path.join(os.path.realpath(sys.prefix), "bin", os.path.basename(sys.executable))
    return os.path.realpath(sys.executable)


def _run_as(iso_uid: int, gid: int, argv: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run(argv, user=iso_uid, group=gid, extra_groups=[], cwd="/", capture_output=True, text=True,
                          timeout=timeout, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})


def _ensure_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    useradd = shutil.which("useradd", path="/usr/sbin:/usr/bin:/sbin:/bin")
    if useradd is None:
        raise OSError("useradd is not installed")
    done = subprocess.run([useradd, "--system", "--no-create-home", "--home-dir", "/nonexistent",
                           "--shell", "/usr/sbin/nologin", name], capture_output=True, text=True)
    if done.returncode != 0 and "already exists" not in done.stderr:
        raise OSError(done.stderr.strip() or f"useradd exited with {done.returncode}")
    return pwd.getpwnam(name)


def _become_subreaper() -> bool:
    """Make this process adopt its descendants' orphans (Linux ``PR_SET_CHILD_SUBREAPER``); False elsewhere."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _live_processes() -> Iterator[tuple[int, int, int, int]]:
    """``(pid, uid, parent pid, process group)`` of every live process, from /proc (zombies, dead and
    waiting to be reaped, left out; a process that ends while it is read is skipped)."""
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not name.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{name}").st_uid
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as f:
                state, parent, group = f.read().rsplit(")", 1)[-1].split()[:3]
        except (OSError, ValueError):
            continue
        if state != "Z":
            yield int(name), uid, int(parent), int(group)


def _processes_of(uid: int) -> list[int]:
    """The live processes of ``uid``."""
    return [pid for pid, owner, _, _ in _live_processes() if owner == uid]


def _orphans() -> list[int]:
    """Live processes whose parent is this one: with the subreaper set, whatever the child left running."""
    me = os.getpid()
    return [pid for pid, _, parent, _ in _live_processes() if parent == me]


def _kill_all(list_them: Callable[[], list[int]]) -> set[int]:
    """Stop, then SIGKILL, every process ``list_them()`` names until it names none (a stopped process
    cannot fork again, so even a fork bomb runs out); returns the ones found."""
    found: set[int] = set()
    for _ in range(1000):
        alive = list_them()
        if not alive:
            break
        found.update(alive)
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in alive if sig == signal.SIGSTOP else list_them():
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        time.sleep(0.01)
    return found


def _remove_files_of(uid: int) -> tuple[int, list[str]]:
    """Delete what ``uid`` owns in the shared folders (walking only into folders others may write, the
    only ones it can have written in), and its System V shared memory, queues and semaphores; returns how
    many entries went, and what could not be removed."""
    removed, seen, problems, looked = 0, set(), [], 0
    stack = [d for d in SHARED_WRITABLE if os.path.isdir(d) and not os.path.islink(d)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            looked += 1
            if looked > 100_000:  # (shared folders of other users' making: the student's own are removed whole)
                problems.append("more than 100000 entries in the shared folders: the rest were not looked at")
                stack = []
                break
            try:
                info = entry.stat(follow_symlinks=False)
                if info.st_uid == uid:
                    count, problem = trees.remove(entry.path)
                    removed += count
                    problems += [problem] if problem else []
                elif stat.S_ISDIR(info.st_mode) and info.st_mode & 0o002 and (info.st_dev, info.st_ino) not in seen:
                    seen.add((info.st_dev, info.st_ino))
                    stack.append(entry.path)
            except OSError:
                continue
    ipcrm = shutil.which("ipcrm", path="/usr/bin:/bin:/usr/sbin:/sbin")
    for kind, flag in (("shm", "-m"), ("msg", "-q"), ("sem", "-s")):
        try:
            with open(f"/proc/sysvipc/{kind}", encoding="utf-8") as f:
                header, *rows = [line.split() for line in f if line.strip()]
        except (OSError, ValueError):
            continue
        for row in rows:
            if ipcrm and int(row[header.index("uid")]) == uid:
                subprocess.run([ipcrm, flag, row[1]], capture_output=True)
                removed += 1
    return removed, problems


def _reap() -> None:
    """Collect the exit status of every adopted child that has ended, so none is left a zombie."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def readable_by(path: str, uid: int, gid: int) -> bool:
    """Could ``uid`` (in group ``gid`` only) read ``path``, by the mode bits of it and every folder above?"""

    def allows(info: os.stat_result, bit: int) -> bool:
        if info.st_uid == uid:
            return bool(info.st_mode & (bit << 6))
        if info.st_gid == gid:
            return bool(info.st_mode & (bit << 3))
        return bool(info.st_mode & bit)

    path = os.path.abspath(path)
    parts = path.split(os.sep)
    for depth in range(1, len(parts)):
        folder = os.sep.join(parts[:depth]) or os.sep
        if not allows(os.stat(folder), 1):  # x: may pass through
            return False
    return allows(os.stat(path), 4)


def isolation(private: tuple[str, ...] = (), user: str = STUDENT_USER, adopt_orphans: bool = False,
              without: tuple[str, ...] = ()) -> Isolation:
    """Set up the student user and the kernel's fences (``confine.py``) when root; say what is reduced otherwise,
    if a fence is missing, or if ``private`` paths are readable.

    ``adopt_orphans``: make this process the subreaper of what the children leave (see ``Isolation.reap``),
    and the last the kernel kills when memory runs out; for a process that grades and does nothing else (the
    ``grade`` command), never a test runner. ``without``: fences not to use (``confine.FEATURES``)."""
    if os.geteuid() != 0:
        return Isolation(note="isolation reduced: the grader is not root, so the student's code runs as the "
                              "grader's own user and could read what the grader can (Gradescope runs as root)",
                         reap=adopt_orphans and _become_subreaper())
    try:
        entry = _ensure_user(user)
    except OSError as err:
        return Isolation(note=f"isolation reduced: could not create the user {user} ({err}); without it, the "
                              "student's code would run as root", reap=adopt_orphans and _become_subreaper())
    python = child_python()
    try:
        probe = _run_as(entry.pw_uid, entry.pw_gid, [python, "-I", "-c", "import numpy"])
        problem = "" if probe.returncode == 0 else (probe.stderr.strip().splitlines() or ["failed"])[-1]
    except (OSError, subprocess.SubprocessError) as err:
        problem = str(err)
    if problem:
        return Isolation(note=f"isolation reduced: the user {user} cannot run {python} ({problem}); install the "
                              "grader's Python where every user can read it (setup.sh's venv, made from a Python "
                              "outside /root); without it, the student's code would run as root",
                         reap=adopt_orphans and _become_subreaper())
    exposed = [p for p in private if os.path.exists(p) and readable_by(p, entry.pw_uid, entry.pw_gid)]
    fences = confine.probe(without=without, protect_self=adopt_orphans)
    reduced = [f"the user {user} can read {', '.join(exposed)} (run_autograder makes these folders private "
               "with chmod 700)"] if exposed else []
    reduced += [fences.note()] if fences.note() else []
    note = f"isolation reduced: {'; '.join(reduced)}" if reduced else ""
    return Isolation(entry.pw_uid, entry.pw_gid, note, reap=adopt_orphans and _become_subreaper(), fences=fences)


def unfenced(iso: Isolation, without: tuple[str, ...] = ()) -> str:
    """What the student's code would run without, said in one clause: the student user (not root, or a user that
    cannot be made or cannot run the grader's Python), or a fence the kernel refuses and ``without`` does not name
    (the instructor's explicit choice); "" when it runs as the student user behind every fence."""
    if iso.uid is None:
        return iso.note.removeprefix("isolation reduced: ")
    refused = {name: why for name, why in (iso.fences.missing if iso.fences else {}).items() if name not in without}
    if refused:
        return "the kernel refuses fences: " + "; ".join(f"no {name} ({why})" for name, why in refused.items())
    return ""


@dataclass
class Workdir:
    """One task's folder: ``package`` (the code under test), ``harness`` (runner and probes), ``home``."""

    root: str
    package: str
    harness: str
    home: str


def make_workdir(harness_files: list[str], iso: Isolation) -> Workdir:
    """A fresh folder the child can read but not change, with a home only it can write."""
    base = tempfile.gettempdir()
    if iso.uid is not None and not readable_by(base, iso.uid, iso.gid or 0):  # (a TMPDIR the student cannot reach)
        base = "/tmp"
    root = tempfile.mkdtemp(prefix="tinyattn-task-", dir=base)
    os.chmod(root, 0o755)
    work = Workdir(root, os.path.join(root, "package"), os.path.join(root, "harness"), os.path.join(root, "home"))
    os.mkdir(work.harness, 0o755)
    for path in harness_files:
        shutil.copy(path, os.path.join(work.harness, os.path.basename(path)))
    os.mkdir(work.home, 0o700)
    if iso.uid is not None:
        os.chown(work.home, iso.uid, iso.gid or 0)
    return work


def seal(folder: str) -> None:
    """Everything under ``folder`` readable by all and writable by its owner (the grader) only."""
    for here, _dirs, files in os.walk(folder):
        os.chmod(here, 0o755)
        for name in files:
            os.chmod(os.path.join(here, name), 0o644)


def remove_workdir(work: Workdir) -> str:
    """Delete a task's folder, whatever tree the student's code left in its home; "" or what is left."""
    return trees.remove(work.root)[1]


@dataclass
class ChildRun:
    """What came back from one child: each test's message (untrusted), the output, how the child ended."""

    messages: dict[str, dict] = field(default_factory=dict)
    output: str = ""
    ended: str = ""  # "" when it exited normally; else what happened (timed out, killed by a signal, ...)
    malformed: int = 0  # channel lines that were not a well-formed message
    leftovers: int = 0  # processes the child left alive at the end (all killed)
    removed: int = 0  # files, folders and IPC objects of the student user left in shared places (all deleted)
    cleanup: list[str] = field(default_factory=list)  # what the cleanup after the child could not do
    out_of_memory: bool = False  # the kernel stopped the task at its memory cgroup's limit
    over_cpu: bool = False  # the grader stopped the child at its CPU time (``Limits.cpu``), measured from outside
    forged: int = 0  # tests whose result came more than once on the channel (none of them counts)


_TASKS = itertools.count()  # (names each task's cgroup)


def run_child(work: Workdir, tests: list[str], seed: int, limits: Limits, iso: Isolation,
              python: str | None = None, watch: dict | None = None) -> ChildRun:
    """Run ``tests`` (probe names) on ``work.package`` in a child; collect what it sends.

    ``watch``: the run-time half of the task's call policy (``task_tests/runner.py``)."""
    read_fd, write_fd = os.pipe()
    env = {"PATH": "/usr/bin:/bin", "HOME": work.home, "TMPDIR": work.home, "MPLCONFIGDIR": work.home,
           "MPLBACKEND": "Agg", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    request = {"seed": seed, "tests": tests, "channel": write_fd, "package_root": work.package,
               "limits": limits.rlimits(as_student=iso.uid is not None), "watch": watch}
    run = ChildRun()
    group = confine.TaskGroup(iso.fences or confine.Fences(), f"tinyattn-task-{os.getpid()}-{next(_TASKS)}")
    entry = None  # as root: the fences, then the student user, between fork and exec (confine.Entry)
    if iso.fences is not None:
        needed = [os.path.realpath(p) for p in (work.root, sys.prefix, sys.base_prefix, os.path.dirname(np.__file__))]
        entry = confine.Entry(iso.fences, group, needed, work.home, iso.uid, iso.gid)
    try:
        proc = subprocess.Popen(
            [python or child_python(), "-I", os.path.join(work.harness, "runner.py")], cwd=work.home, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
            start_new_session=True, umask=0o077, preexec_fn=entry.enter if entry else None,
            user=None if entry else iso.uid, group=None if entry else iso.gid,
            extra_groups=[] if iso.uid is not None and not entry else None)
    except BaseException:
        run.cleanup += _clean_up(None, iso, group, run)
        raise
    finally:
        os.close(write_fd)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request).encode())
            proc.stdin.close()
        except OSError:  # the child died before reading its request
            pass
        output, channel, run.ended, run.over_cpu = _collect(proc, proc.stdout.fileno(), read_fd, limits)
    finally:
        run.cleanup += _clean_up(proc, iso, group, run)
        os.close(read_fd)
        proc.stdout.close() if proc.stdout else None
    if not run.ended and proc.returncode:
        code = proc.returncode
        run.ended = (f"killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals()
                     else f"exited with status {code}")
    if run.out_of_memory:
        run.ended = (run.ended + "; " if run.ended else "") + (
            f"reached the task's memory limit ({(iso.fences or confine.Fences()).task_memory >> 20} MiB)")
    run.output = untrusted.text(output.decode("utf-8", "replace"))
    received: dict[str, list[dict]] = {}
    for line in channel.split(b"\n"):
        if not line.strip():
            continue
        message = _message(line, set(tests))
        if message is None:
            run.malformed += 1
        else:
            received.setdefault(message["test"], []).append(message)
    for test, messages in received.items():
        run.messages[test] = _one_result(test, messages)
        run.forged += len(messages) > 1
    return run


REFUSALS = ("PolicyError", "OverBudget")  # what the runner sends when the task's code broke its policy at run time


def _one_result(test: str, messages: list[dict]) -> dict:
    """The result of ``test``: the runner sends one message per test, so when the channel carried several, the
    task's code wrote the others, before or after the runner's. Then no arrays count, whichever came first: a
    refusal among them stands (the policy's verdict), else the test fails."""
    if len(messages) == 1:
        return messages[0]
    for message in messages:
        if "error" in message and message["error"]["type"] in REFUSALS:
            return message
    why = (f"{len(messages)} results came for this test on the channel, where the runner sends one: the task's code "
           "wrote the others")
    return {"test": test, "error": {"type": "ForgedResult", "message": why, "frames": []}}


def _clean_up(proc: subprocess.Popen | None, iso: Isolation, group: confine.TaskGroup, run: ChildRun) -> list[str]:
    """End every process of the task and remove what it left; what could not be done (never an exception,
    so that a cleanup that fails costs no other task anything)."""
    problems: list[str] = []
    steps: list[tuple[str, Callable[[], None]]] = []
    left: set[int] = set()
    if proc is not None:
        steps.append(("stopping the child", lambda: left.update(_stop(proc))))
    steps.append(("killing the task's cgroup", lambda: left.update(_kill_all(group.pids))))
    if iso.uid is not None:
        uid, gid = iso.uid, iso.gid or 0

        def remove_files() -> None:
            run.removed, not_removed = _remove_files_of(uid)
            problems.extend(not_removed)

        steps.append(("killing the student user's processes",
                      lambda: left.update(_kill_all(lambda: _processes_of(uid)))))
        steps.append(("removing the student user's files", remove_files))
        if iso.fences is not None and iso.fences.keyrings:
            steps.append(("clearing the keyrings", lambda: confine.clear_keyrings(uid, gid, child_python())))
    if iso.reap:
        steps.append(("killing the orphans", lambda: left.update(_kill_all(_orphans))))
        steps.append(("reaping", _reap))
    def remove_group() -> None:
        run.out_of_memory = group.out_of_memory()
        problems.append(group.remove())

    steps.append(("removing the task's cgroup", remove_group))
    for what, step in steps:
        try:
            step()
        except Exception as err:  # noqa: BLE001 - report it and go on: the next step, the next task
            problems.append(f"{what} failed: {type(err).__name__}: {err}")
    run.leftovers = len(left)
    return [p for p in problems if p]


def cpu_time(pid: int) -> float:
    """The CPU seconds process ``pid`` (all its threads) has used, read from /proc by the grader; 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime, in clock ticks


def _collect(proc: subprocess.Popen, out_fd: int, channel_fd: int, limits: Limits) -> tuple[bytes, bytes, str, bool]:
    """Read the child's output and channel, each up to its cap, until both close, time is up, or the child has used
    its CPU time (watched here, from outside: nothing the child does can stop the watch). Returns the output, the
    channel, how the child ended ("" if it exited), and whether it was stopped at its CPU time."""
    kept = {out_fd: bytearray(), channel_fd: bytearray()}
    caps = {out_fd: limits.output, channel_fd: limits.channel}
    ended, over, over_cpu = "", False, False
    selector = selectors.DefaultSelector()
    for fd in kept:
        selector.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + limits.seconds
    grace: float | None = None  # once the child exits, a detached process holding the pipes gets a second
    while selector.get_map():
        now = time.monotonic()
        if now >= deadline:
            ended = f"ran past the time limit of {limits.seconds:g} s"
            break
        if grace is None and cpu_time(proc.pid) > limits.cpu_seconds():
            ended, over_cpu = f"ran past the CPU limit of {limits.cpu_seconds():g} s", True
            break
        if grace is None and proc.poll() is not None:
            grace = now + 1.0
        if grace is not None and now >= grace:
            break
        for key, _ in selector.select(timeout=min(0.1, deadline - now)):
            data = os.read(key.fd, 1 << 16)
            if not data:
                selector.unregister(key.fd)
                continue
            room = caps[key.fd] - len(kept[key.fd])
            kept[key.fd] += data[:max(room, 0)]
            over = over or (key.fd == channel_fd and len(data) > room)
    selector.close()
    if over and not ended:
        ended = f"sent more than {limits.channel} bytes of results"
    return bytes(kept[out_fd]), bytes(kept[channel_fd]), ended, over_cpu


def _stop(proc: subprocess.Popen) -> set[int]:
    """Kill the child's whole process group and reap the child; returns the group's other processes."""
    group = {pid for pid, _, _, pgrp in _live_processes() if pgrp == proc.pid and pid != proc.pid}
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
    return group


_DTYPES = {"|b1", "<i8", "<i4", "<u1", "<f8", "<f4", "|u1", "|i1"}


def _message(line: bytes, tests: set[str]) -> dict | None:
    """One channel line as ``{"test", "arrays": {name: ndarray}, "notes": [text]}`` or ``{"test", "error": {...}}``;
    None if bad."""
    try:
        raw = json.loads(line)
        test = raw["test"]
        if test not in tests:
            return None
        if "error" in raw:
            err = raw["error"]
            frames = [(untrusted.text(str(f[0]), 300), int(f[1]), untrusted.text(str(f[2]), 300))
                      for f in err.get("frames", [])][-8:]
            return {"test": test, "error": {"type": untrusted.text(str(err["type"]), 100),
                                            "message": untrusted.text(str(err["message"]), 10_000), "frames": frames}}
        arrays = {}
        for name, spec in raw["arrays"].items():
            if spec["dtype"] not in _DTYPES:
                return None
            shape = tuple(int(n) for n in spec["shape"])
            if len(shape) > 8 or any(n < 0 for n in shape):
                return None
            data = base64.b64decode(spec["data"], validate=True)
            array = np.frombuffer(data, dtype=np.dtype(spec["dtype"]))
            arrays[untrusted.text(str(name), 100)] = array.reshape(shape).copy()
        notes = [untrusted.text(str(note), 1000) for note in raw.get("notes", [])[:5]]
        return {"test": test, "arrays": arrays, "notes": notes}
    except Exception:  # anything malformed (nested a million deep: a RecursionError) is just bad data
        return None
