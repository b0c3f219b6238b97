"""``torch.nn.parallel``: ``DataParallel`` on the one device there is (the CPU).

torch's ``DataParallel`` splits each batch across GPUs, runs a replica of the module on each and gathers the
outputs on ``output_device``. With one CPU device there is one replica: the module runs on the whole batch,
which gives the same numbers. It keeps the module as ``.module`` (so a state_dict's names start with
``module.``, as torch's do).
"""

from __future__ import annotations

from typing import Any

from ...autograd.devices import check_device
from ..module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Run ``module`` on the whole batch, on the CPU: torch's ``DataParallel`` with one device."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        for device in list(device_ids or []) + ([output_device] if output_device is not None else []):
            check_device("DataParallel", device if not isinstance(device, int) else "cpu")
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device, self.dim = output_device, dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """``module(*inputs, **kwargs)``: one replica, the whole batch."""
        return self.module(*inputs, **kwargs)
