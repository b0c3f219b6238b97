"""Shared fixtures of the homework tests.

``reference`` loads the values the reference implementation computed when the
assignment was made (``reference_values.npz``, shipped with the autograder only).
"""

import os

import numpy as np
import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "task(id, points): the homework task a test grades, and its points")


def pytest_sessionstart(session):
    """Refuse to grade a different tinyattn than the one asked for (TINYATTN_PACKAGE_ROOT)."""
    expected = os.environ.get("TINYATTN_PACKAGE_ROOT")
    if expected:
        import tinyattn

        got = os.path.dirname(os.path.dirname(os.path.abspath(tinyattn.__file__)))
        if os.path.realpath(got) != os.path.realpath(expected):
            raise pytest.UsageError(f"tinyattn was imported from {got}, expected {expected}")


@pytest.fixture(scope="session")
def reference():
    beside = os.path.join(os.path.dirname(__file__), "reference_values.npz")
    path = os.environ.get("TINYATTN_REFERENCE_VALUES") or beside
    if not os.path.exists(path):
        pytest.fail(f"reference values not found at {path}")
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def assert_matches_reference(got: dict, reference: dict, prefix: str) -> None:
    """Every array a probe computed equals the reference's (float64, tight tolerance)."""
    keys = sorted(k for k in reference if k.startswith(prefix + "/"))
    assert keys, f"no reference values for {prefix}"
    for key in keys:
        name = key.split("/", 1)[1]
        assert name in got, f"missing {name}"
        np.testing.assert_allclose(np.asarray(got[name]), reference[key], rtol=1e-7, atol=1e-9, err_msg=key)
