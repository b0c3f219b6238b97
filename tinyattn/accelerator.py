"""``torch.accelerator``: the current accelerator, which on tinyattn is none (the CPU does the work)."""

from __future__ import annotations

from typing import Any


def is_available() -> bool:
    """False: tinyattn has no accelerator."""
    return False


def device_count() -> int:
    """0: no accelerator devices."""
    return 0


def current_accelerator(check_available: bool = False) -> Any:
    """None: no accelerator (code then falls back to ``"cpu"``, as with torch on a CPU-only machine)."""
    return None
