"""What a course's probes are written with: ``@task``, and the few helpers every gradient probe needs.

A probe is a function of a seed that calls the code under test and returns ``{name: array}``; the
grader runs it on the student's code and on the reference with the same seed and compares the two
(``judges.py``). It decides nothing. ``@task(id=..., points=...)`` says which task it grades; the
grader reads it from the source before anything runs, so ``id``, ``points`` and ``hidden`` must be
written as plain values.
"""

import numpy as np


def task(id, points=1, hidden=False):
    """Mark a probe as graded: its task, its points, whether its results stay hidden until published."""
    def mark(fn):
        fn.task = (id, points, hidden)
        return fn
    return mark


def rng_for(seed):
    """The probe's random numbers: every input it draws comes from here, so the reference sees the same."""
    return np.random.default_rng(seed)


def leaves(rng, *shapes):
    """Random float64 tensors of ``shapes`` that require gradients."""
    import tinyattn as ta

    return [ta.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]


def backward_from_random(out, rng):
    """Backward from a random upstream gradient (never ``out.sum()``: a gradient of ones hides transposes)."""
    out.backward(rng.standard_normal(out.shape))


def grads(prefix, *tensors):
    """``{prefix0: the first tensor's gradient, ...}``."""
    return {f"{prefix}{i}": t.grad.numpy() for i, t in enumerate(tensors)}
