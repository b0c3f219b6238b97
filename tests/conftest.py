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
