import os

import numpy as np
import pytest


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
