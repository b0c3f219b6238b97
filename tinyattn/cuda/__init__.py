"""``torch.cuda`` as a CPU-only torch has it: no device is available, so device-agnostic code takes the CPU path."""

from __future__ import annotations

from typing import Any

from . import amp  # noqa: F401 (torch.cuda.amp)


def is_available() -> bool:
    """False: tinyattn computes on the CPU only."""
    return False


def device_count() -> int:
    """0: there is no CUDA device."""
    return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False (no CUDA, and NumPy has no bfloat16)."""
    return False


def manual_seed(seed: int) -> None:
    """Nothing to seed (no CUDA device); here so seeding code written for GPUs runs."""


def manual_seed_all(seed: int) -> None:
    """Nothing to seed (no CUDA device)."""


def synchronize(device: Any = None) -> None:
    """Nothing to wait for (no CUDA device)."""


def empty_cache() -> None:
    """Nothing to free (no CUDA device)."""
