"""``torch.backends.cudnn`` as a CPU-only torch has it: the flags exist and may be set; nothing reads them here.

Training scripts set ``cudnn.benchmark = True`` or ``cudnn.deterministic = True`` before they
start; on the CPU neither changes a result, in torch or here (tinyattn's results are
deterministic anyway), so the assignment is kept and the script goes on.
"""

from __future__ import annotations

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = 10


def is_available() -> bool:
    """False: there is no cuDNN (no CUDA device)."""
    return False


def version() -> None:
    """None: no cuDNN library is loaded."""
    return None
