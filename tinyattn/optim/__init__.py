"""tinyattn.optim: ``SGD``, ``Adam``, ``AdamW`` with torch's update rules."""

from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer"]
