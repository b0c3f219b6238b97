"""The kernel's fences around one task's child, where the kernel offers them (Linux, as root).

Killing a task's processes and deleting its files at the end is not enough: a process can
leave behind objects that belong to no process and to no folder the grader knows, and use
memory that no ``RLIMIT_AS`` counts. So, before the child becomes the student user, it is
put behind six fences, each probed once (``probe``) and each reported when it is missing:

* **namespaces** (``unshare``): a new IPC namespace, so its System V objects and POSIX
  message queues exist only for it and die with its last process; and a new mount namespace
  in which ``/tmp``, ``/var/tmp``, ``/dev/shm``, the lock folders, ``/dev/mqueue`` and its
  home are fresh filesystems of their own, capped in size and files, gone with it (the task's
  folder is bound back in at its own path), and every other filesystem is read-only. So every
  place it can write is fresh, and nothing it writes reaches the next task.
* **a memory cgroup** per task (v1 or v2): every page its processes touch counts, shared
  memory and tmpfs files included, and the kernel stops the task at its limit, which is
  kept below what the grader itself may use;
* **OOM scores**: the grader ``-1000`` (never chosen), the child ``+1000`` (chosen first),
  so a machine out of memory kills the student's code, not the grader;
* **keyrings**: the child gets a session keyring of its own, and the keyrings that outlive a
  session (the student user's user, user-session and persistent keyrings) are cleared before
  and after each task;
* **no network**: a network namespace of its own, with no interface but a loopback that is down, so its
  code can reach no host, no port of the grader's machine and no abstract socket outside it;
* **no threads or processes** (a seccomp filter, the last thing before exec): the system calls
  that start a thread or a process fail for the child and for all it runs. A filter cannot be
  removed, so the task's code cannot switch it off, and no thread of its can run where the
  runner's watch of its calls (a profile hook, per thread) does not see it.

``Fences`` says which hold; ``enter`` is what the child runs (``preexec_fn``) before it
execs the runner: fences first, as root, then the switch to the student user.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from dataclasses import dataclass, field
from typing import Callable

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x08000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x8, 0x1000, 0x4000, 0x40000
MS_RDONLY, MS_REMOUNT = 0x1, 0x20
# A mount's own options, as /proc/self/mountinfo lists them, and the flag that keeps each on a remount
MOUNT_OPTIONS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": 0x400,
                 "nodiratime": 0x800, "relatime": 0x200000}
# The kernel's own filesystems: views of the kernel's state, not places to keep files
KERNEL_FILESYSTEMS = ("proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "securityfs", "debugfs", "tracefs",
                      "bpf", "pstore", "configfs", "fusectl", "binfmt_misc", "efivarfs", "hugetlbfs", "autofs")
KEYCTL_GET_KEYRING_ID, KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR, KEYCTL_GET_PERSISTENT = 0, 1, 7, 22
KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -3, -4, -5
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")  # fresh for each child, with /dev/mqueue
# and its home (a folder that is a link to another, or missing, is skipped)
FEATURES = ("namespaces", "network", "cgroup", "oom", "keyrings", "threads")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, kind: str | None, flags: int, options: str | None = None) -> None:
    _check(_libc.mount(source and source.encode(), target.encode(), kind and kind.encode(), ctypes.c_ulong(flags),
                       options and options.encode()), f"mount {target}")


_KEYCTL_NUMBER = {"x86_64": 250, "aarch64": 219}  # the keyctl system call's number
EPERM, ENOSYS = 1, 38
# Per machine: the architecture seccomp sees, and the system calls that start a thread or a process, with the
# error each gets (clone3 gets ENOSYS: its flags are in memory, where a filter cannot read them, and on ENOSYS the
# C library falls back to clone)
_STARTS = {"x86_64": (0xC000003E, {56: EPERM, 57: EPERM, 58: EPERM, 435: ENOSYS}),  # clone, fork, vfork, clone3
           "aarch64": (0xC00000B7, {220: EPERM, 435: ENOSYS})}  # clone, clone3
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x06  # the classic-BPF instructions used
X32_SYSCALL_BIT = 0x40000000  # x86_64's other numbering of the same calls


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def no_threads_or_processes() -> None:
    """From here on this process, and whatever it execs, can start no thread and no process.

    A seccomp filter: the kernel runs it on every system call. It reads the call's architecture (offset 4 of
    ``struct seccomp_data``) and number (offset 0); clone, fork, vfork and clone3 return an error, every other call
    runs. A filter is never removed, and ``no_new_privs`` (which it needs) is never cleared."""
    arch, starts = _STARTS.get(os.uname().machine, (None, {}))
    if arch is None:
        raise OSError(ENOSYS, f"no system call numbers for {os.uname().machine}")
    program = [(BPF_LD_W_ABS, 0, 0, 4),
               (BPF_JEQ_K, 1, 0, arch),  # another architecture's numbering (i386 calls on x86_64): refused
               (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS),
               (BPF_LD_W_ABS, 0, 0, 0)]
    if arch == _STARTS["x86_64"][0]:
        program += [(BPF_JGE_K, 0, 1, X32_SYSCALL_BIT), (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS)]
    for number, error in starts.items():
        program += [(BPF_JEQ_K, 0, 1, number), (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | error)]
    program.append((BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    instructions = (_SockFilter * len(program))(*(_SockFilter(*step) for step in program))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                       ctypes.c_ulong(0)), "prctl(PR_SET_NO_NEW_PRIVS)")
    fprog = _SockFprog(len(program), instructions)
    _check(_libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), ctypes.c_ulong(0),
                       ctypes.c_ulong(0)), "prctl(PR_SET_SECCOMP)")


def mounts() -> list[tuple[str, str, int]]:
    """Every mount this process sees: its path, its filesystem's type, and the flags of its own options."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            before, _, after = line.partition(" - ")
            fields = before.split()
            point = fields[4].encode().decode("unicode_escape")  # (a space is written \040)
            flags = sum(MOUNT_OPTIONS.get(option, 0) for option in fields[5].split(","))
            found.append((point, after.split()[0], flags))
    return found


def read_only_everywhere() -> None:
    """Remount every filesystem this (private) mount namespace sees read-only, the kernel's own excepted."""
    for point, kind, flags in mounts():
        if kind in KERNEL_FILESYSTEMS or point.startswith(("/proc/", "/sys/")) or point in ("/proc", "/sys"):
            continue
        _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


def _keyctl(operation: int, key: int, other: int = 0) -> int:
    """The ``keyctl`` system call with one or two arguments."""
    number = _KEYCTL_NUMBER.get(os.uname().machine)
    if number is None:
        return -1
    return _libc.syscall(ctypes.c_long(number), ctypes.c_long(operation), ctypes.c_long(key), ctypes.c_long(other),
                         ctypes.c_long(0), ctypes.c_long(0))


@dataclass
class Fences:
    """Which fences hold on this machine, and the sizes they are set to."""

    namespaces: bool = False
    cgroup: str = ""  # the folder in which each task's memory cgroup is made; "" when there is none
    cgroup_version: int = 0
    oom: bool = False
    keyrings: bool = False
    network: bool = False  # the child is in a network namespace of its own, with no interface up
    threads: bool = False  # the child can start no thread or process
    missing: dict[str, str] = field(default_factory=dict)  # fence -> why it does not hold
    remarks: list[str] = field(default_factory=list)  # how the fences that hold are set, for the log
    task_memory: int = 4 << 30  # bytes for all of one task's processes, shared memory and files
    scratch: int = 256 << 20  # bytes of each fresh /tmp, /var/tmp, /dev/shm and home
    inodes: int = 10_000  # files and folders in each of them

    def note(self) -> str:
        """"" when every fence holds; else one line naming what is missing and why."""
        return "; ".join(f"no {name} ({why})" for name, why in self.missing.items())


def _memory_cgroup() -> tuple[str, int, int | None]:
    """This process's memory cgroup folder, the version, and its limit in bytes (None: no limit); or ("", 0, None)."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f]
    except OSError:
        return "", 0, None
    for _, controllers, path in lines:  # v1: a hierarchy of its own for memory
        if "memory" in controllers.split(","):
            folder = "/sys/fs/cgroup/memory" + path.rstrip("/")
            if os.path.isfile(os.path.join(folder, "memory.limit_in_bytes")):
                return folder, 1, _read_limit(os.path.join(folder, "memory.limit_in_bytes"))
    for number, controllers, path in lines:  # v2: the unified hierarchy, with memory enabled below this group
        if number == "0" and controllers == "":
            folder = "/sys/fs/cgroup" + path.rstrip("/")
            try:
                with open(os.path.join(folder, "cgroup.subtree_control"), encoding="utf-8") as f:
                    enabled = "memory" in f.read().split()
            except OSError:
                enabled = False
            if enabled:
                return folder, 2, _read_limit(os.path.join(folder, "memory.max"))
    return "", 0, None


def _read_limit(path: str) -> int | None:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().strip()
    except OSError:
        return None
    return None if text == "max" or not text.isdigit() or int(text) >= 1 << 60 else int(text)


def _usage(folder: str, version: int) -> int:
    try:
        with open(os.path.join(folder, "memory.usage_in_bytes" if version == 1 else "memory.current")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 0


def _holds_in_a_child(attempt: Callable[[], None]) -> bool:
    """Whether ``attempt()`` returns without raising, tried in a throwaway child (what it changes dies with it)."""
    pid = os.fork()
    if pid == 0:
        try:
            attempt()
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def probe(task_memory: int = 4 << 30, without: tuple[str, ...] = (), protect_self: bool = False) -> Fences:
    """Which fences this machine offers (``without``: fences not to use, by name, as if the kernel refused them).

    ``protect_self``: set this process's OOM score to -1000 (for a process that grades and does nothing else)."""
    fences = Fences(task_memory=task_memory)
    for name in without:
        if name not in FEATURES:
            raise ValueError(f"unknown fence {name!r} (known: {', '.join(FEATURES)})")
        fences.missing[name] = "turned off"
    if os.geteuid() != 0:
        for name in FEATURES:
            fences.missing.setdefault(name, "the grader is not root")
        return fences
    if "namespaces" not in without:
        def namespaces() -> None:
            _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare")
            _mount(None, "/", None, MS_REC | MS_PRIVATE)
            read_only_everywhere()
            _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m")

        if _holds_in_a_child(namespaces):
            fences.namespaces = True
        else:
            fences.missing["namespaces"] = ("the kernel refused unshare(CLONE_NEWNS | CLONE_NEWIPC), a read-only "
                                            "remount or a tmpfs mount")
    if "network" not in without:
        if _holds_in_a_child(lambda: _check(_libc.unshare(CLONE_NEWNET), "unshare")):
            fences.network = True
        else:
            fences.missing["network"] = "the kernel refused unshare(CLONE_NEWNET)"
    if "cgroup" not in without:
        folder, version, limit = _memory_cgroup()
        if not folder:
            fences.missing["cgroup"] = "no memory cgroup this process may divide"
        else:
            test = os.path.join(folder, f"tinyattn-probe-{os.getpid()}")
            try:
                os.mkdir(test)
                os.rmdir(test)
                fences.cgroup, fences.cgroup_version = folder, version
                if limit is not None:  # leave the grader room: the task gets at most what is free, less 256 MiB
                    fences.task_memory = max(64 << 20, min(task_memory, limit - _usage(folder, version) - (256 << 20)))
            except OSError as err:
                fences.missing["cgroup"] = f"cannot make a cgroup in {folder} ({err.strerror})"
    if "oom" not in without:  # the children's score is raised (anyone may); the grader's lowered, if it may
        fences.oom = True
        if protect_self:
            try:
                with open("/proc/self/oom_score_adj", "w") as f:
                    f.write("-1000")
                fences.remarks.append("the grader's OOM score is -1000, each child's +1000")
            except OSError as err:
                fences.remarks.append(f"each child's OOM score is +1000; the grader's stays as it was ({err.strerror}: "
                                      "lowering it needs CAP_SYS_RESOURCE)")
    if "keyrings" not in without:
        if _keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING) >= 0 or ctypes.get_errno() not in (38, 1):
            fences.keyrings = True  # (ENOSYS or EPERM: keyrings are off here, e.g. under a seccomp filter)
        else:
            fences.missing["keyrings"] = "the kernel refuses keyctl, so no process can keep keys either"
    if "threads" not in without:
        def threads() -> None:  # the filter holds if a fork then fails
            no_threads_or_processes()
            try:
                grandchild = os.fork()
            except OSError:
                return
            if grandchild == 0:
                os._exit(0)
            raise OSError("a fork succeeded under the filter")

        if _holds_in_a_child(threads):
            fences.threads = True
        else:
            fences.missing["threads"] = "the kernel refused a seccomp filter, or has no numbers for this machine"
    return fences


class TaskGroup:
    """One task's memory cgroup: made before the child starts, emptied and removed after it."""

    def __init__(self, fences: Fences, name: str):
        self.folder = os.path.join(fences.cgroup, name) if fences.cgroup else ""
        self.version = fences.cgroup_version
        if not self.folder:
            return
        try:
            os.mkdir(self.folder)
        except OSError as err:
            raise OSError(err.errno, f"cannot make the task's cgroup {self.folder}: {err.strerror}") from None
        limits = ([("memory.limit_in_bytes", fences.task_memory), ("memory.memsw.limit_in_bytes", fences.task_memory)]
                  if self.version == 1 else [("memory.max", fences.task_memory), ("memory.swap.max", 0)])
        for name, value in limits:  # (memsw and swap.max exist only where swap is accounted)
            path = os.path.join(self.folder, name)
            if os.path.exists(path):
                with open(path, "w") as f:
                    f.write(str(value))

    def join(self) -> None:
        """Put the calling process in the group (the child does, before it execs)."""
        if self.folder:
            with open(os.path.join(self.folder, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def pids(self) -> list[int]:
        """The processes in the group."""
        if not self.folder:
            return []
        try:
            with open(os.path.join(self.folder, "cgroup.procs")) as f:
                return [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            return []

    def out_of_memory(self) -> bool:
        """Did the kernel stop a process of the group at its limit?"""
        if not self.folder:
            return False
        name, key = ("memory.oom_control", "oom_kill") if self.version == 1 else ("memory.events", "oom_kill")
        try:
            with open(os.path.join(self.folder, name)) as f:
                counts = dict(line.split() for line in f if len(line.split()) == 2)
            if int(counts.get(key, 0)) > 0:
                return True
            if self.version == 1:
                with open(os.path.join(self.folder, "memory.failcnt")) as f:
                    return int(f.read().strip()) > 0
        except (OSError, ValueError):
            return False
        return False

    def remove(self) -> str:
        """Remove the (emptied) group; "" or why it is left."""
        if not self.folder:
            return ""
        try:
            os.rmdir(self.folder)
            return ""
        except OSError as err:
            return f"the task's cgroup {self.folder} is left: {err.strerror}"


@dataclass
class Entry:
    """What the child does between fork and exec: ``enter`` (its ``preexec_fn``)."""

    fences: Fences
    group: TaskGroup
    keep: list[str]  # folders the child needs (the task's, the Python's), bound back where a fresh /tmp hides them
    home: str  # the child's home: a fresh filesystem of its own, which only the student user may use
    uid: int | None
    gid: int | None

    def enter(self) -> None:
        """Fences first, as root; then become the student user, with a session keyring of its own."""
        if self.fences.oom:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        self.group.join()
        if self.fences.namespaces:
            _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare")
            _mount(None, "/", None, MS_REC | MS_PRIVATE)
            read_only_everywhere()  # then the places it may write, each fresh
            hidden = [p for p in self.keep if any(p == s or p.startswith(s + "/") for s in SCRATCH)]
            kept = [os.open(p, os.O_RDONLY | os.O_DIRECTORY) for p in hidden]  # (in the new namespace, to bind)
            size = f"size={self.fences.scratch},nr_inodes={self.fences.inodes}"
            for folder in SCRATCH:
                if os.path.isdir(folder) and not os.path.islink(folder):
                    _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"{size},mode=1777")
            if os.path.isdir("/dev/mqueue"):
                _mount("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            for path, fd in zip(hidden, kept):  # hidden by a fresh /tmp: bound back at the same path
                before = os.umask(0o022)  # (the child's umask, 077, would make the folders above it root's alone)
                os.makedirs(path, 0o755, exist_ok=True)
                os.umask(before)
                _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND)
                os.close(fd)
            owner = f",uid={self.uid},gid={self.gid}" if self.uid is not None else ""
            _mount("tmpfs", self.home, "tmpfs", MS_NOSUID | MS_NODEV, f"{size},mode=0700{owner}")
            os.chdir(self.home)
        if self.fences.network:
            _check(_libc.unshare(CLONE_NEWNET), "unshare")  # (a loopback only, down: no host is reachable)
        if self.uid is not None:
            os.setgroups([])
            os.setgid(self.gid if self.gid is not None else self.uid)
            os.setuid(self.uid)
        if self.fences.keyrings:
            _keyctl(KEYCTL_JOIN_SESSION_KEYRING, 0)  # a new session keyring, its own (what it links, it holds)
            persistent = _keyctl(KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_SESSION_KEYRING)
            if persistent >= 0:
                _keyctl(KEYCTL_CLEAR, persistent)
            for keyring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
                _keyctl(KEYCTL_CLEAR, keyring)
        if self.fences.threads:
            no_threads_or_processes()


def clear_keyrings(uid: int, gid: int, python: str) -> None:
    """Clear the keyrings of ``uid`` that outlive a session: its persistent keyring, its user and user-session
    keyrings (a process of that user must ask: root cannot name them)."""
    number = _KEYCTL_NUMBER.get(os.uname().machine)
    if number is None:
        return
    code = ("import ctypes; s = ctypes.CDLL(None).syscall\n"
            f"s({number}, {KEYCTL_JOIN_SESSION_KEYRING}, 0, 0, 0, 0)\n"
            f"p = s({number}, {KEYCTL_GET_PERSISTENT}, -1, {KEY_SPEC_SESSION_KEYRING}, 0, 0)\n"
            f"p >= 0 and s({number}, {KEYCTL_CLEAR}, p, 0, 0, 0)\n") + "".join(
        f"s({number}, {KEYCTL_CLEAR}, {keyring}, 0, 0, 0)\n" for keyring in (KEY_SPEC_USER_KEYRING,
                                                                         KEY_SPEC_USER_SESSION_KEYRING))
    subprocess.run([python, "-I", "-S", "-c", code], user=uid, group=gid, extra_groups=[], cwd="/",
                   capture_output=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
