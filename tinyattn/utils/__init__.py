"""Utilities as torch's ``torch.utils``: ``data``, ``benchmark`` and ``tensorboard``.

``data`` holds datasets and loaders, ``benchmark`` a ``Timer``, and ``tensorboard`` its name only, refused with a
reason."""

from . import benchmark, data, tensorboard

__all__ = ["benchmark", "data", "tensorboard"]
