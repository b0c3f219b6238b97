"""Devices, as torch names them; tinyattn computes on the CPU only.

``device("cuda")`` can be made, as in torch, so that code choosing a device runs;
putting a tensor there raises the error a CPU-only torch raises. Device-agnostic
code (``device = "cuda" if ta.cuda.is_available() else "cpu"``) takes the CPU path.
"""

from __future__ import annotations

from typing import Any

DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu", "meta")


class device:
    """Where a tensor lives: ``device("cpu")``, ``device("cuda:0")``, ``device("cuda", 0)``."""

    __slots__ = ("type", "index")

    type: str
    index: int | None

    def __init__(self, type: Any, index: int | None = None) -> None:
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"device: expected a string like 'cpu' or 'cuda:0', got {type!r}")
        name, _, number = type.partition(":")
        if name not in DEVICE_TYPES:
            raise RuntimeError(f"device: expected one of {', '.join(DEVICE_TYPES)} at the start of "
                               f"the device string, got {type!r}")
        if number:
            if index is not None or not number.isdigit():
                raise RuntimeError(f"device: invalid device string {type!r}")
            index = int(number)
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"device: the index must be a non-negative int, got {index!r}")
        self.type, self.index = name, index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type={self.type!r}{index})"


CPU = device("cpu")


def check_device(op: str, where: Any) -> device:
    """``where`` (None, a string, a device) as the CPU device; any other device raises as a CPU-only torch."""
    if where is None:
        return CPU
    if isinstance(where, int) and not isinstance(where, bool):  # torch reads a bare int as a CUDA ordinal
        where = device("cuda", where)
    d = device(where)
    if d.type == "cpu":
        return CPU
    if d.type == "meta":
        raise NotImplementedError(f"{op}: the meta device (shapes without data) is not implemented")
    raise RuntimeError(
        f"{op}: device {str(d)!r} is not available: tinyattn runs on the CPU only "
        f"(as a torch built without {d.type.upper()}: 'Torch not compiled with {d.type.upper()} enabled')"
    )


_default_device = CPU


def set_default_device(device: Any) -> None:
    """Set the device factories use (only the CPU exists here; None resets it)."""
    global _default_device
    _default_device = check_device("set_default_device", device)


def get_default_device() -> device:
    """The device factories use: the CPU."""
    return _default_device
