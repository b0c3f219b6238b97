import os

# One BLAS thread per process, set before NumPy loads OpenBLAS: `-n auto` already runs one worker per core, and the
# scripts and graders the tests start are more processes; BLAS threads on top only fight them for the same cores
# (the examples' tests took 30% less CPU time and 22% less time with one). A variable already set is kept.
for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    """In CI (TINYATTN_REQUIRE_TORCH=1) the torch cross-checks must run, not skip."""
    if os.environ.get("TINYATTN_REQUIRE_TORCH") == "1":
        try:
            import torch  # noqa: F401
        except ImportError as err:
            raise pytest.UsageError(f"TINYATTN_REQUIRE_TORCH=1 but torch cannot be imported: {err}") from err


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh, seeded generator per test (global RNG state is never touched)."""
    return np.random.default_rng(1234)


GRADING = "tests/homework/"  # (whose tests take turns on a lock: tests/homework/conftest.py)


def grading_on_one_worker() -> type:
    """pytest-xdist's scheduler by scope, each test its own but every grading test in one: one worker runs them
    all, so that no other waits for the lock while one grades (imported only with -n: xdist is then there)."""
    from xdist.scheduler import LoadScopeScheduling

    class GradingOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return GRADING if nodeid.startswith(GRADING) else nodeid

    return GradingOnOneWorker


@pytest.hookimpl(optionalhook=True)  # (pytest-xdist's hook: how ``-n auto`` hands out the tests)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # type: ignore[no-untyped-def]
    return grading_on_one_worker()(config, log)
