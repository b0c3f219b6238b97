"""``torch.amp``: mixed precision, as a CPU-only torch has it where it can, and saying so where it cannot.

* ``GradScaler`` scales a loss so that float16 gradients do not underflow on a GPU. Here there
  is no GPU, so, exactly as torch on a machine without CUDA, it warns and disables itself;
  disabled (``enabled=False``), ``scale`` returns the loss as it is, ``step`` steps the optimizer,
  ``update`` and ``unscale_`` do nothing, and the scale is 1.0.
* ``autocast("cuda")`` warns and does nothing, as torch without CUDA does. ``autocast("cpu",
  dtype=torch.bfloat16)`` would compute matmuls in bfloat16 in torch; NumPy has no bfloat16, so
  here it warns that the block runs in the tensors' own dtypes (float32): the results are those
  of full precision, close to torch's to bfloat16's precision. ``enabled=False`` is silent.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

import numpy as np

_FULL = ("float32", "float64")


def _dtype_name(dtype: Any) -> str:
    try:
        return np.dtype(dtype).name
    except TypeError:  # (a name NumPy does not know: "bfloat16")
        return str(getattr(dtype, "name", dtype)).replace("torch.", "")


class autocast:  # noqa: N801 (torch's name)
    """``with torch.autocast("cuda"):`` / ``@torch.autocast("cpu", dtype=torch.bfloat16)``: see the module docstring."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True, cache_enabled: Any = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        kind = device_type.split(":")[0]
        if kind not in ("cpu", "cuda", "mps", "xpu", "xla", "hpu"):
            raise RuntimeError(f"autocast: unknown device type {device_type!r} (tinyattn computes on the cpu)")
        self.device_type, self.fast_dtype, self.enabled = kind, dtype, bool(enabled)
        if not self.enabled:
            return
        if kind != "cpu":
            warnings.warn(f"User provided device_type of '{kind}', but it is not available here (tinyattn computes "
                          "on the CPU). Disabling autocast.", UserWarning, stacklevel=2)
            self.enabled = False
        elif _dtype_name(dtype if dtype is not None else "bfloat16") not in _FULL:
            warnings.warn(f"autocast('cpu', dtype={_dtype_name(dtype or 'bfloat16')}): tinyattn has no "
                          f"{_dtype_name(dtype or 'bfloat16')} (NumPy has none), so this block runs in the "
                          "tensors' own dtypes (float32): its results are full precision, close to torch's to "
                          "that dtype's precision", UserWarning, stacklevel=2)

    def __enter__(self) -> autocast:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Used as a decorator: ``fn`` run inside this block."""

        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return wrapped


class GradScaler:
    """Loss scaling for float16 training on a GPU; here (no GPU) disabled, as torch's is without CUDA."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        if enabled:
            warnings.warn(f"torch.amp.GradScaler is enabled, but {device} is not available here (tinyattn computes "
                          "on the CPU).  Disabling.", UserWarning, stacklevel=2)
        self._enabled = False
        self._device = device
        self._growth = (growth_factor, backoff_factor, growth_interval)

    def is_enabled(self) -> bool:
        """False: scaling is off (there is no float16 GPU training here)."""
        return self._enabled

    def scale(self, outputs: Any) -> Any:
        """The loss (or losses) as they are: the scale is 1."""
        return outputs

    def unscale_(self, optimizer: Any) -> None:
        """Nothing to undo: the gradients were never scaled."""

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``optimizer.step(*args, **kwargs)``."""
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: Any = None) -> None:
        """Nothing to update: the scale stays 1."""

    def get_scale(self) -> float:
        """1.0: disabled, as torch's reports."""
        return 1.0

    def get_growth_factor(self) -> float:
        """The factor given (unused while disabled)."""
        return self._growth[0]

    def get_backoff_factor(self) -> float:
        """The factor given (unused while disabled)."""
        return self._growth[1]

    def get_growth_interval(self) -> int:
        """The interval given (unused while disabled)."""
        return self._growth[2]

    def state_dict(self) -> dict[str, Any]:
        """``{}``: a disabled scaler has no state (as torch's)."""
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Accept a saved scaler's state; a disabled scaler keeps none."""


def is_autocast_available(device_type: str) -> bool:
    """True for "cpu" (``autocast("cpu")`` is accepted, see above), False for the others."""
    return device_type == "cpu"


__all__ = ["GradScaler", "autocast", "is_autocast_available"]
