"""``torch.distributed`` as a torch built without it answers: not available, never initialized.

A single-process script asks ``dist.is_available() and dist.is_initialized()`` before it uses a
process group, and takes the one-process path when the answer is False. Everything that needs a
group (``init_process_group``, ``get_rank``, ``all_reduce``, ``barrier``, ...) says that there is
none here and what to do instead.
"""

from __future__ import annotations

from typing import Any, NoReturn


def is_available() -> bool:
    """False: tinyattn trains in one process."""
    return False


def is_initialized() -> bool:
    """False: there is no process group."""
    return False


def is_torchelastic_launched() -> bool:
    """False: not started by torchrun."""
    return False


def _refuse(name: str) -> NoReturn:
    raise RuntimeError(f"torch.distributed.{name}: tinyattn trains in one process and has no process groups "
                       "(torch.distributed.is_available() is False); take the single-process path "
                       "(rank 0 of a world of 1)")


def init_process_group(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: no process groups here."""
    _refuse("init_process_group")


def destroy_process_group(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: no process groups here."""
    _refuse("destroy_process_group")


def get_rank(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: no process group to have a rank in."""
    _refuse("get_rank")


def get_world_size(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: no process group to count."""
    _refuse("get_world_size")


def barrier(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: no process group to wait for."""
    _refuse("barrier")


def all_reduce(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: no process group to reduce over."""
    _refuse("all_reduce")


def broadcast(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: no process group to broadcast to."""
    _refuse("broadcast")


def all_gather(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: no process group to gather from."""
    _refuse("all_gather")


__all__ = ["all_gather", "all_reduce", "barrier", "broadcast", "destroy_process_group", "get_rank",
           "get_world_size", "init_process_group", "is_available", "is_initialized", "is_torchelastic_launched"]
