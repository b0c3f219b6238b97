"""``tinyattn.utils``: ``data`` (datasets and loaders), ``tensorboard`` (its name, refused with a reason)."""

from . import data, tensorboard

__all__ = ["data", "tensorboard"]
