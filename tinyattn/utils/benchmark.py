"""``torch.utils.benchmark``: ``Timer`` runs a statement many times and reports the time per run.

torch's ``Timer`` also handles threads, CUDA synchronisation and instruction counts; tutorials use it to time
a statement against another: ``Timer(stmt="f(x)", globals=globals()).timeit(100)``. This one does that on the
CPU, with ``time.perf_counter``, and prints its ``Measurement`` as torch's does (the statement, then the time
per run).
"""

from __future__ import annotations

import statistics
import time
import timeit as _timeit
from typing import Any

__all__ = ["Measurement", "Timer"]


class Measurement:
    """The result of a ``Timer``: ``times`` holds the seconds per run of each measurement (one or more)."""

    def __init__(self, number_per_run: int, raw_times: list[float], task_spec: str) -> None:
        self.number_per_run = number_per_run
        self.raw_times = raw_times
        self.times = [t / number_per_run for t in raw_times]
        self.stmt = task_spec

    @property
    def mean(self) -> float:
        """The mean seconds per run."""
        return statistics.fmean(self.times)

    @property
    def median(self) -> float:
        """The median seconds per run."""
        return statistics.median(self.times)

    def __repr__(self) -> str:
        value, unit = _readable(self.median)
        runs = self.number_per_run * len(self.raw_times)
        return (f"<tinyattn.utils.benchmark.Measurement object at {hex(id(self))}>\n{self.stmt}\n  {value:.2f} {unit}\n"
                f"  {len(self.raw_times)} measurement, {runs} runs , 1 thread")


def _readable(seconds: float) -> tuple[float, str]:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return seconds / scale, unit
    return seconds / 1e-9, "ns"


class Timer:
    """Time ``stmt`` (a string of code, run with ``globals``) after ``setup``, as torch's ``Timer``."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "", timer: Any = time.perf_counter,
                 globals: dict[str, Any] | None = None, label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None, num_threads: int = 1,
                 language: Any = "python") -> None:
        if language not in ("python", "py"):
            raise ValueError(f"Timer: only Python statements are timed here, got language={language!r}")
        self.stmt = stmt
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=dict(globals or {}))

    def timeit(self, number: int = 1000000) -> Measurement:
        """Run ``stmt`` ``number`` times (after one run to warm up); the time per run."""
        self._timer.timeit(1)
        return Measurement(number, [self._timer.timeit(number)], self.stmt)

    def blocked_autorange(self, callback: Any = None, min_run_time: float = 0.2) -> Measurement:
        """Run ``stmt`` in blocks until ``min_run_time`` seconds have passed; the time per run of each block."""
        number, _ = self._timer.autorange()
        block = max(1, number // 10)
        times: list[float] = []
        while sum(times) < min_run_time:
            times.append(self._timer.timeit(block))
            if callback is not None:
                callback(block, times[-1])
        return Measurement(block, times, self.stmt)

    adaptive_autorange = blocked_autorange
