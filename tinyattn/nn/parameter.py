"""``Parameter``: a tensor that a ``Module`` registers as learnable."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Tensor, pickling


class Parameter(Tensor):
    """A leaf tensor that requires grad; assigning one to a Module attribute registers it."""

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = np.zeros((0,), np.float32)  # (torch: an empty parameter)
        self.array = data.array if isinstance(data, Tensor) else np.asarray(data)  # (shares a tensor's memory)
        self.requires_grad = requires_grad

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        """``copy.deepcopy(p)``: a new Parameter with a copy of the values, without ``.grad`` (as torch's)."""
        return pickling.deepcopy(self, memo, keep_grad=False)
