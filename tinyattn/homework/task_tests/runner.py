"""The student's side of grading: run the probes asked for, send back what they returned. Decides nothing.

The grader starts ``python -I runner.py`` in a fresh folder holding this file, ``probes.py``
and the package under test, and writes one JSON request to its stdin:
``{"seed", "tests", "limits", "channel", "package_root", "watch"}``. Before any of the student's code is imported,
the limits are set (soft and hard, so the code cannot raise them again). Then each probe
runs and one JSON line per test goes to the channel (a pipe the grader reads):
``{"test": name, "arrays": {name: {"dtype", "shape", "data"}}, "notes": [...]}`` (notes: what went wrong
on a large input, if anything) or
``{"test": name, "error": {"type", "message", "frames"}}``. The grader treats every byte
of it as untrusted data.

``watch`` (the run-time half of the tasks' call policies, ``homework/policy.py``) maps a test to
its task's lines in the package and the calls they may make (``{test: {"files": {path: [[first,
last], ...]}, "calls": [...]}}``): while that test's probe runs, every call those lines make into
the package's own Python code must be to one of ``calls``; a probe whose task code made another
fails with ``PolicyError``.
"""

import base64
import json
import os
import resource
import sys
import traceback

_KINDS = {"b", "i", "u", "f"}  # bool, int, unsigned, float: arrays of anything else are refused


def _encode(value):
    import numpy as np

    array = np.asarray(value)
    if array.dtype.kind not in _KINDS:
        raise TypeError(f"a probe returned an array of dtype {array.dtype}, not numbers")
    data = base64.b64encode(array.tobytes(order="C")).decode()
    return {"dtype": array.dtype.str, "shape": list(array.shape), "data": data}


def _describe(err, package_root):
    frames = []
    for frame in traceback.extract_tb(err.__traceback__):
        path = os.path.abspath(frame.filename)
        if path.startswith(package_root + os.sep):
            frames.append([os.path.relpath(path, package_root), frame.lineno, frame.name])
    if isinstance(err, SyntaxError) and err.filename:  # where the parser stopped, in the student's file
        path = os.path.abspath(err.filename)
        if path.startswith(package_root + os.sep):
            frames.append([os.path.relpath(path, package_root), err.lineno, "(syntax)"])
    try:
        message = str(err)[:4000]
    except Exception:  # an exception whose str() fails
        message = "(the exception's message could not be shown)"
    return {"type": type(err).__name__, "message": message, "frames": frames[-8:]}


class _Watch:
    """Calls from the task's lines into the package that the task's policy does not allow."""

    def __init__(self, spec, package_root):
        self.files = {path: [tuple(span) for span in spans] for path, spans in spec["files"].items()}
        self.library = os.path.join(package_root, "tinyattn") + os.sep
        self.root = package_root
        self.calls = set(spec["calls"])
        self.refused = []

    def hook(self, frame, event, arg):
        if event != "call":
            return
        caller = frame.f_back
        spans = self.files.get(caller.f_code.co_filename) if caller is not None else None
        if spans is None or not any(first <= caller.f_lineno <= last for first, last in spans):
            return
        code = frame.f_code
        own = code.co_filename in self.files and any(  # the task's own code: a lambda, a comprehension, a def
            first <= code.co_firstlineno <= last for first, last in self.files[code.co_filename])
        if code.co_filename.startswith(self.library) and code.co_name not in self.calls and not own:
            where = f"{code.co_name} ({os.path.relpath(code.co_filename, self.root)})"
            if where not in self.refused:
                self.refused.append(where)
            raise PolicyError(self.said())  # (at the first such call: raised here, it stops the call, and the probe)

    def said(self):
        return ("the task's code called " + ", ".join(self.refused[:5]) + ", which its policy does not allow "
                "(write the computation out)")

    def run(self, probe, seed):
        """``probe(seed)``, watched; raises PolicyError if the task's code made a call it may not (even if the code
        caught the one the watch raised)."""
        self.refused = []
        sys.setprofile(self.hook)
        try:
            result = probe(seed)
        finally:
            sys.setprofile(None)
        if self.refused:
            raise PolicyError(self.said())
        return result


class PolicyError(Exception):
    """The task's code made a call its policy does not allow."""


def main():
    request = json.loads(sys.stdin.read())
    for name, value in request["limits"].items():
        resource.setrlimit(getattr(resource, name), (value, value))
    channel = os.fdopen(request["channel"], "w", encoding="utf-8")
    package_root = os.path.abspath(request["package_root"])
    sys.path[:0] = [package_root, os.path.dirname(os.path.abspath(__file__))]

    def send(message):
        channel.write(json.dumps(message) + "\n")
        channel.flush()

    import probing  # (the harness's own, before any code of the student's: a large input's budget fits in half the
    probing.BUDGET = min(probing.BUDGET, request["limits"]["RLIMIT_CPU"] / 2)  # task's CPU time, and stops first)
    try:
        import probes
    except BaseException as err:  # a syntax error in the student's code, say: every test gets it
        for test in request["tests"]:
            send({"test": test, "error": _describe(err, package_root)})
        return
    watches = {test: _Watch(spec, package_root) for test, spec in (request.get("watch") or {}).items()}
    for test in request["tests"]:
        try:
            probe = getattr(probes, test)
            probing.NOTES.clear()
            arrays = watches[test].run(probe, request["seed"]) if test in watches else probe(request["seed"])
            message = {"test": test, "arrays": {name: _encode(value) for name, value in arrays.items()}}
            if probing.NOTES:  # (what went wrong on a large input: said with the output it cost)
                message["notes"] = [str(note)[:1000] for note in probing.NOTES[:5]]
            send(message)
        except BaseException as err:  # noqa: B036 - SystemExit from the student's code fails only this test
            send({"test": test, "error": _describe(err, package_root)})


if __name__ == "__main__":
    main()
