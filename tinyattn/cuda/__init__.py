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


class _CudaTensorType(type):
    """``torch.cuda.FloatTensor`` and its kin: the name exists (code picks it when CUDA is there), no tensor is one."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return False

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"type torch.cuda.{cls.__name__} not available: tinyattn computes on the CPU only "
                        f"(use torch.{cls.__name__}, or choose the type with torch.cuda.is_available())")


FloatTensor = _CudaTensorType("FloatTensor", (), {})
DoubleTensor = _CudaTensorType("DoubleTensor", (), {})
HalfTensor = _CudaTensorType("HalfTensor", (), {})
LongTensor = _CudaTensorType("LongTensor", (), {})
IntTensor = _CudaTensorType("IntTensor", (), {})
ByteTensor = _CudaTensorType("ByteTensor", (), {})
BoolTensor = _CudaTensorType("BoolTensor", (), {})
