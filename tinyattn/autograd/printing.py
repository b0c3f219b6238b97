"""How tensors print: ``torch.set_printoptions`` and ``torch.Size``, as torch has them.

``set_printoptions(precision=, threshold=, edgeitems=, linewidth=, profile=, sci_mode=)`` sets
what every later ``repr`` of a tensor shows (the digits after the point, how many elements
before it summarises with ``...``, how many it keeps at each end, the line width); ``profile``
is one of torch's presets ("default", "short", "full"). The numbers are laid out by NumPy, so
the spacing can differ from torch's; the options mean what torch's mean.

``Size`` is a shape that prints as torch's, ``torch.Size([2, 3])``: what ``Tensor.size()``
returns. (``Tensor.shape`` stays a plain tuple: it is read on every step of the student's path.)
"""

from __future__ import annotations

import math
import sys
from typing import Any, Iterable

import numpy as np

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": sys.maxsize, "edgeitems": 3, "linewidth": 80},
}
_OPTIONS: dict[str, Any] = {**_PROFILES["default"], "sci_mode": None}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set how tensors print from now on (see the module's docstring); unnamed options keep their values."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {', '.join(_PROFILES)}, got {profile!r}")
        _OPTIONS.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            _OPTIONS[name] = value
    _OPTIONS["sci_mode"] = sci_mode


def array_text(array: np.ndarray, prefix: str) -> str:
    """``array``'s values as ``repr`` shows them, under the options set."""
    threshold = _OPTIONS["threshold"]
    return np.array2string(array, precision=_OPTIONS["precision"], separator=", ", prefix=prefix,
                           threshold=sys.maxsize if threshold == math.inf else int(threshold),
                           edgeitems=_OPTIONS["edgeitems"], max_line_width=_OPTIONS["linewidth"],
                           floatmode="maxprec", suppress_small=_OPTIONS["sci_mode"] is False,
                           formatter={"float_kind": lambda x: f"{x:.{_OPTIONS['precision']}e}"}
                           if _OPTIONS["sci_mode"] else None)


class Size(tuple):
    """``torch.Size``: a shape, a tuple of ints that prints as torch's."""

    def __new__(cls, sizes: Iterable[Any] = ()) -> Size:
        """``torch.Size([2, 3])``: the sizes, each an int (a bool or a float is refused, as torch)."""
        values = tuple(sizes)
        for i, v in enumerate(values):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is '{type(v).__name__}')")
        return super().__new__(cls, (int(v) for v in values))

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    __str__ = __repr__

    def __getitem__(self, index: Any) -> Any:
        item = super().__getitem__(index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other: Any) -> Size:
        return Size(tuple(self) + tuple(other))

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        return math.prod(self)
