"""A fake Gradescope machine for the grading tests: an /autograder tree, setup.sh's venv, run_autograder.

Gradescope runs ``run_autograder`` as root with ``/autograder`` world-traversable and the
venv that ``setup.sh`` made readable by every user. Here the tree is made the same way,
in a fresh folder under /tmp (mode 755, as ``/autograder``), and the venv is one made from
the system's Python of this interpreter's version, with this interpreter's NumPy copied
in, since a venv of a Python under /root (pyenv's) is out of the student user's reach.
Without root or without such a Python the student user cannot be exercised: tests that
need it skip, or fail when ``TINYATTN_REQUIRE_ISOLATION=1`` (CI's main run).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import pytest

from tinyattn.homework import commands, sandbox

_VENV: list[str | None] = []


def student_venv() -> str | None:
    """A venv the student user can run (made once), or None when this machine cannot have one."""
    if _VENV:
        return _VENV[0]
    system = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if os.geteuid() != 0 or not os.path.exists(system):
        _VENV.append(None)
        return None
    folder = tempfile.mkdtemp(prefix="tinyattn-test-venv-")
    os.chmod(folder, 0o755)
    subprocess.run([system, "-m", "venv", "--without-pip", folder], check=True)
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([os.path.join(folder, "bin", "python"), "-c", where], check=True, capture_output=True,
                          text=True).stdout.strip()
    here = os.path.dirname(os.path.dirname(np.__file__))
    for name in ("numpy", "numpy.libs"):
        if os.path.isdir(os.path.join(here, name)):
            shutil.copytree(os.path.join(here, name), os.path.join(site, name))
    _VENV.append(folder)
    return folder


def remove_student_venv() -> None:
    """Delete the venv at the end of the session."""
    if _VENV and _VENV[0]:
        shutil.rmtree(_VENV[0], ignore_errors=True)


def require_isolation() -> str:
    """The student venv; skip the test (or fail, in CI) when the student user cannot be exercised here."""
    venv = student_venv()
    if venv is None:
        why = ("the student user needs root and a system Python "
               f"{sys.version_info.major}.{sys.version_info.minor} at /usr/bin (root: {os.geteuid() == 0})")
        if os.environ.get("TINYATTN_REQUIRE_ISOLATION") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return venv


_FENCES: list = []


def require_fences(*names: str) -> None:
    """Skip, saying why, where this machine's kernel refuses one of the fences ``names`` (``confine.FEATURES``)
    the test needs: the test of that configuration is the one with the fence turned off."""
    from tinyattn.homework import confine

    if not _FENCES:
        _FENCES.append(confine.probe() if os.geteuid() == 0 else None)
    fences = _FENCES[0]
    if fences is None:
        pytest.skip("the kernel's fences need root")
    missing = {name: why for name, why in fences.missing.items() if name in names}
    if missing:
        pytest.skip("this machine's kernel refuses " + "; ".join(f"{n} ({w})" for n, w in missing.items()))


class Box:
    """One fake /autograder: ``root`` with source/ (the unzipped zip), submission/, results/."""

    def __init__(self, zip_path: str, venv: str | None):
        self.root = tempfile.mkdtemp(prefix="tinyattn-autograder-")
        os.chmod(self.root, 0o755)
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(os.path.join(self.root, "source"))
        shutil.copy(os.path.join(self.root, "source", "run_autograder"), os.path.join(self.root, "run_autograder"))
        os.mkdir(os.path.join(self.root, "submission"))
        if venv:
            os.symlink(venv, os.path.join(self.root, "venv"))
        self.submission = os.path.join(self.root, "submission")
        self.results_path = os.path.join(self.root, "results", "results.json")

    def run(self, timeout: float = 60, without: str = "", prefix: tuple[str, ...] = (),
            unconfined: bool = False) -> tuple[dict, str]:
        """Run run_autograder as Gradescope does; the results and what it printed (the instructor's log).

        ``without``: the kernel fences the grader is not to use (``TINYATTN_GRADER_WITHOUT``), as on a kernel
        that refuses them; ``prefix``: a command that runs run_autograder (in a memory-limited cgroup, say);
        ``unconfined``: grade even where the student user cannot run the venv (``TINYATTN_GRADER_UNCONFINED``)."""
        env = {**os.environ, "AUTOGRADER_ROOT": self.root, "AUTOGRADER_TIMEOUT": str(timeout),
               "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               "TINYATTN_GRADER_WITHOUT": without}
        if unconfined:
            env["TINYATTN_GRADER_UNCONFINED"] = "1"
        env.pop("PYTHONPATH", None)
        done = subprocess.run([*prefix, "bash", os.path.join(self.root, "run_autograder")], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr  # Gradescope needs results.json, not a status
        with open(self.results_path, encoding="utf-8") as f:
            return json.load(f), done.stdout + done.stderr

    def results(self) -> dict:
        """results.json as it is now."""
        with open(self.results_path, encoding="utf-8") as f:
            return json.load(f)

    def remove(self) -> None:
        """Delete the tree."""
        shutil.rmtree(self.root, ignore_errors=True)


def student_processes() -> list[int]:
    """The processes of the student user still alive (zombies aside)."""
    try:
        uid = __import__("pwd").getpwnam(sandbox.STUDENT_USER).pw_uid
    except KeyError:
        return []
    alive = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    with open(f"/proc/{name}/stat") as f:
                        if f.read().rsplit(")", 1)[-1].split()[0] != "Z":
                            alive.append(int(name))
            except OSError:
                pass
    return alive


def solved_student(assignment: str, dest: str, tasks: list[str]) -> str:
    """A copy of the student folder with ``tasks`` solved; returns its path."""
    shutil.copytree(os.path.join(assignment, "student"), dest)
    if tasks:
        commands.solve(dest, tasks)
    return dest
