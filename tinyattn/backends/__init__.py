"""``torch.backends``: which accelerator back ends exist here (none: tinyattn runs on the CPU)."""

from . import mps

__all__ = ["mps"]
