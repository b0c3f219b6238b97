"""``torch.cuda.amp``: the older spelling of ``torch.amp`` for CUDA (``autocast()``, ``GradScaler()``); no GPU here."""

from __future__ import annotations

from typing import Any

from .. import amp


def autocast(enabled: bool = True, dtype: Any = None, cache_enabled: bool = True) -> amp.autocast:
    """``torch.amp.autocast("cuda", ...)``: with no GPU, it warns and does nothing (as torch without CUDA)."""
    return amp.autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """``torch.amp.GradScaler("cuda", ...)``: with no GPU, disabled (as torch without CUDA)."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


__all__ = ["GradScaler", "autocast"]
