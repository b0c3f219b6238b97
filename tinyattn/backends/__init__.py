"""``torch.backends``: which accelerator back ends exist here (none: tinyattn runs on the CPU), and their flags."""

from . import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]
