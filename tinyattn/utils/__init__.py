"""``tinyattn.utils``: ``data`` (datasets and loaders), ``benchmark`` (a ``Timer``), ``tensorboard`` (its name,
refused with a reason)."""

from . import benchmark, data, tensorboard

__all__ = ["benchmark", "data", "tensorboard"]
