"""What a course's probes are written with: ``@task``, and the few helpers every gradient probe needs.

A probe is a function of a seed that calls the code under test and returns ``{name: array}``; the
grader runs it on the student's code and on the reference with the same seed and compares the two
(``judges.py``). It decides nothing. ``@task(id=..., points=...)`` says which task it grades; the
grader reads it from the source before anything runs, so ``id``, ``points`` and ``hidden`` must be
written as plain values.
"""

import signal
import threading

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


# A backward task's hidden probe also runs on an input with thousands of elements per row: a derived
# backward takes milliseconds there (an explicit Jacobian per row, the slowest honest answer seen, about
# 4.5 s); differentiating numerically (a forward per element, or per column) takes many minutes. So the
# probe has a budget of CPU time, which a busy machine does not use up faster: only the work the code does
# counts, not the time it waits for a core. (The runner lowers it to half the task's CPU time where that is
# less than a minute, so the budget stops the probe before the task's limit does.)
BUDGET = 30.0


class _Alarm(BaseException):  # (not an Exception: ``except Exception`` in the code under test lets it through)
    pass


class OverBudget(TimeoutError):
    """A probe's large input took more CPU time than its budget."""


def within_budget(seconds, run):
    """``run()``, stopped with TimeoutError after ``seconds`` of this process's CPU time (again every 0.1 s, should
    the code catch it); in the main thread only (the grader's threads compute the reference without a budget)."""
    if threading.current_thread() is not threading.main_thread():
        return run()

    def over(signum, frame):
        raise _Alarm()

    previous = signal.signal(signal.SIGPROF, over)
    signal.setitimer(signal.ITIMER_PROF, seconds, 0.1)
    try:
        return run()
    except _Alarm:
        raise OverBudget(f"took more than {seconds:g} s of CPU time on a large input, where a derived backward "
                         "takes milliseconds (is it differentiating numerically?)") from None
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


# What went wrong on a probe's large input, for the feedback (the runner sends it with the probe's arrays and
# empties it after each probe)
NOTES: list[str] = []


def large_gradient(rng, make, shape):
    """The gradient of ``make(x)`` for a large random ``x`` of ``shape``, from a random upstream gradient, within
    the budget; the probe returns it under a name starting ``large`` (``large_grad``, say). It scores as one output
    of its probe, like the others: when the code under test raises on it, the gradient is all NaN (that output
    fails, with the error in the feedback) and the probe's other outputs still count. Over the budget, the whole
    probe stops (``OverBudget``)."""
    (x,) = leaves(rng, shape)
    try:
        within_budget(BUDGET, lambda: backward_from_random(make(x), rng))
    except OverBudget:
        raise
    except Exception as err:
        NOTES.append(f"on the large input ({x.shape[0]} x {x.shape[1]}): {type(err).__name__}: {err}")
        return np.full(x.shape, np.nan)
    return x.grad.numpy()
