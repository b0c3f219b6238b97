"""tinyattn.optim: ``SGD``, ``Adam``, ``AdamW`` with torch's update rules."""

from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["lr_scheduler", "SGD", "Adam", "AdamW", "Optimizer"]
