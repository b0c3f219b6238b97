"""The verdicts: run by the grader, in its own process, on arrays only. Never sent to the student's side.

``judge(test, got, want)`` decides one graded test. ``got`` is what the probe returned in
the student's process (sent back as plain data), ``want`` what the same probe returned on
the reference, with the same seed. A test first checks the properties its name promises
(on the student's arrays alone, so the message says what is wrong in words), then every
array against the reference, at float64 tolerance. It raises ``Failed`` with a message
for the student; the message never contains the reference's values.
"""

from __future__ import annotations

import numpy as np

RTOL, ATOL = 1e-7, 1e-9


class Failed(Exception):
    """A graded test failed; the message is what the student reads."""


def _check(ok, message):
    if not ok:
        raise Failed(message)


def matches_reference(got, want):
    """Every array the reference produced, in the student's result, with its shape and values."""
    for name, expected in want.items():
        _check(name in got, f"{name}: missing from the result")
        actual = got[name]
        _check(actual.shape == expected.shape, f"{name}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}")
        if expected.dtype == bool or actual.dtype == bool:
            _check(np.array_equal(actual, expected), f"{name}: differs from the reference")
            continue
        actual, expected = actual.astype(np.float64), expected.astype(np.float64)
        nan = np.isnan(actual) & ~np.isnan(expected)
        _check(not nan.any(), f"{name}: {int(nan.sum())} of {actual.size} values are NaN")
        close = np.isclose(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True)
        if not close.all():
            where = tuple(int(i) for i in np.argwhere(~close)[0])
            gap = np.abs(actual - expected)[~close]
            raise Failed(f"{name}: {int((~close).sum())} of {actual.size} values differ from the reference "
                         f"(first at index {where}; largest difference {np.nanmax(gap):.3g})")


def _distributions(got):
    p, out, v, blocked = got["p"], got["out"], got["v"], got["blocked"].astype(bool)
    _check(p.shape == blocked.shape, f"p: shape {tuple(p.shape)}, expected {tuple(blocked.shape)}")
    _check(np.allclose(p.sum(-1), 1.0), "the attention weights of a query do not sum to one")
    _check(np.all(p[blocked] == 0), "a masked key got a nonzero weight")
    _check(out.shape == (p.shape[0], v.shape[1]), f"out: shape {tuple(out.shape)}, expected {(p.shape[0], v.shape[1])}")
    lo, hi = v.min(0), v.max(0)
    _check(np.all(out >= lo - 1e-12) and np.all(out <= hi + 1e-12), "an output is not a weighted average of the values")


def _positions(got):
    alone, changed = got["self_only"], got["self_only_changed"]
    _check(np.allclose(alone[:, :3], changed[:, :3]),
           "with each query seeing only itself, positions 0-2 changed when only position 3's input did")
    _check(not np.allclose(alone[:, 3], changed[:, 3]), "position 3's output ignored position 3's input")
    perm = got["perm"].astype(np.int64)
    _check(np.allclose(got["permuted"], got["plain"][:, perm]), "permuting the positions did not permute the output")


def _first_adam_step(got):
    _check(np.allclose(got["start"] - got["after"], 0.01 * np.sign(got["grad"]), rtol=1e-5),
           "Adam's first step did not move each weight by lr against its gradient")


def _minimises(got):
    _check(np.abs(got["p"]).max() < 0.05, f"after 300 steps on sum(p^2), max |p| is {np.abs(got['p']).max():.3g}")


PROPERTIES = {
    "test_attention_weights_are_distributions_over_allowed_keys": _distributions,
    "test_split_heads_keeps_positions_apart": _positions,
    "test_merge_heads_keeps_positions_apart": _positions,
    "test_adam_first_step_moves_each_weight_by_lr": _first_adam_step,
    "test_adam_minimises_a_quadratic": _minimises,
}


def judge(test, got, want):
    """Raise ``Failed`` unless the student's arrays ``got`` pass ``test`` against the reference's ``want``."""
    prop = PROPERTIES.get(test)
    if prop is not None:
        missing = sorted(set(want) - set(got))
        _check(not missing, f"{', '.join(missing)}: missing from the result")
        try:
            prop(got)
        except (ValueError, IndexError, TypeError) as err:  # arrays of shapes the property cannot use
            raise Failed(f"the result has the wrong shape: {err}") from None
    matches_reference(got, want)
