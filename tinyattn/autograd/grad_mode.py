"""torch's ``torch.autograd.grad_mode``: the switches, from the core's ``core/grad_mode.py``."""

from .core.grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled, set_recorder

__all__ = ["enable_grad", "inference_mode", "is_grad_enabled", "no_grad", "set_grad_enabled", "set_recorder"]
