"""``torch.utils.tensorboard``: the name imports, and ``SummaryWriter`` says clearly that it writes nothing here.

TensorBoard's event files are a protocol-buffer format that its own package writes; tinyattn depends
on NumPy and matplotlib only, so a ``SummaryWriter`` cannot be made. Rather than take the calls
and drop them (a program would seem to log and leave no trace), making one raises, naming what to do.
"""

from __future__ import annotations

from typing import Any

MESSAGE = ("SummaryWriter: tinyattn does not write TensorBoard event files (that needs the tensorboard package "
           "and its file format). Log the values another way (print them, or plot them with matplotlib), or "
           "remove the SummaryWriter lines.")


class SummaryWriter:
    """torch's TensorBoard writer: refused here (see the module's docstring), with what to do instead."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(MESSAGE)


__all__ = ["SummaryWriter"]
