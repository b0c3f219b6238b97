"""``torch.backends.cuda`` as a CPU-only torch has it: its flags may be set and read; nothing runs on a GPU.

``matmul.allow_tf32`` and the scaled-dot-product kernels' switches (``enable_flash_sdp`` ...)
choose among CUDA kernels; here every attention runs the one NumPy computation
(``F.scaled_dot_product_attention``), whichever is switched on, as torch's does on the CPU.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: the precision switches of CUDA matmuls."""

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    """False: this is not a CUDA build."""
    return False


def enable_flash_sdp(enabled: bool) -> None:
    """Switch the flash attention kernel on or off (a CUDA kernel: no effect on the CPU)."""
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Switch the memory-efficient attention kernel on or off (a CUDA kernel: no effect on the CPU)."""
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    """Switch the math attention kernel on or off."""
    _sdp["math"] = bool(enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    """Switch the cuDNN attention kernel on or off (a CUDA kernel: no effect on the CPU)."""
    _sdp["cudnn"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    """Whether the flash kernel is switched on."""
    return _sdp["flash"]


def mem_efficient_sdp_enabled() -> bool:
    """Whether the memory-efficient kernel is switched on."""
    return _sdp["mem_efficient"]


def math_sdp_enabled() -> bool:
    """Whether the math kernel is switched on."""
    return _sdp["math"]


def cudnn_sdp_enabled() -> bool:
    """Whether the cuDNN kernel is switched on."""
    return _sdp["cudnn"]


@contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True) -> Iterator[None]:
    """Within the block, the kernels switched as given; after it, as before."""
    before = dict(_sdp)
    _sdp.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient, cudnn=enable_cudnn)
    try:
        yield
    finally:
        _sdp.clear()
        _sdp.update(before)


def preferred_linalg_library(backend: Any = None) -> str:
    """The library CUDA linear algebra would use: none here."""
    return "Default"
