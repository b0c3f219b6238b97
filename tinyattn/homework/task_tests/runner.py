"""The student's side of grading: run the probes asked for, send back what they returned. Decides nothing.

The grader starts ``python -I runner.py`` in a fresh folder holding this file, ``probes.py``
and the package under test, and writes one JSON request to its stdin:
``{"seed", "tests", "limits", "channel"}``. Before any of the student's code is imported,
the limits are set (soft and hard, so the code cannot raise them again). Then each probe
runs and one JSON line per test goes to the channel (a pipe the grader reads):
``{"test": name, "arrays": {name: {"dtype", "shape", "data"}}}`` or
``{"test": name, "error": {"type", "message", "frames"}}``. The grader treats every byte
of it as untrusted data.
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

    try:
        import probes
    except BaseException as err:  # a syntax error in the student's code, say: every test gets it
        for test in request["tests"]:
            send({"test": test, "error": _describe(err, package_root)})
        return
    for test in request["tests"]:
        try:
            arrays = getattr(probes, test)(request["seed"])
            send({"test": test, "arrays": {name: _encode(value) for name, value in arrays.items()}})
        except BaseException as err:  # noqa: B036 - SystemExit from the student's code fails only this test
            send({"test": test, "error": _describe(err, package_root)})


if __name__ == "__main__":
    main()
