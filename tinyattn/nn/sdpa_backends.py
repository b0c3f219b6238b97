"""``torch.nn.attention``'s backend switch: ``sdpa_kernel`` and ``SDPBackend``.

torch chooses among several kernels for ``scaled_dot_product_attention`` (flash,
memory-efficient, cuDNN, math). tinyattn has one implementation, the readable
composition in ``functional.py``; ``sdpa_kernel`` accepts any backend and runs that
one, so code that picks a kernel runs unchanged and gives the same numbers.
"""

from __future__ import annotations

import contextlib
import enum
from typing import Any, Iterator


class SDPBackend(enum.IntEnum):
    """torch's kernel names for scaled dot-product attention (all run the one implementation here)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends: Any, set_priority: bool = False) -> Iterator[None]:
    """Run the block with the given backends allowed: here a check of the names, then the one implementation."""
    listed = backends if isinstance(backends, (list, tuple, set)) else [backends]
    for b in listed:
        if not isinstance(b, SDPBackend):
            raise TypeError(f"sdpa_kernel: expected SDPBackend members, got {b!r}")
    yield
