"""tinyattn.optim: ``SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad`` with torch's update rules."""

from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import Adagrad, RMSprop
from .sgd import SGD

__all__ = ["lr_scheduler", "SGD", "Adam", "AdamW", "Adagrad", "Optimizer", "RMSprop"]
