"""``ParameterList`` and ``ParameterDict``: parameters held in a list or a dict, registered as torch's.

Each parameter is registered under its index (``"0"``, ``"1"``, ...) or its key, so it is in
``parameters()``, ``named_parameters()`` and ``state_dict()`` under that name.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Iterable, Iterator

from ..autograd import Tensor
from .module import DictView, Module
from .parameter import Parameter


def _as_parameter(where: str, value: Any) -> Parameter:
    """A Parameter as it is, a tensor wrapped in one (as torch does), anything else refused."""
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value.detach())
    raise TypeError(f"{where}: expected a Parameter or a Tensor, got {type(value).__name__}")


class ParameterList(Module):
    """A list of parameters: ``self.heads = nn.ParameterList(nn.Parameter(...) for _ in range(h))``."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def append(self, value: Any) -> ParameterList:
        """Register ``value`` under the next index."""
        self.register_parameter(str(len(self)), _as_parameter("ParameterList.append", value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Append each of ``values``."""
        for value in values:
            self.append(value)
        return self

    def __getitem__(self, i: int) -> Parameter:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for a ParameterList of {n}")
        return self._parameters[str(i % n)]  # type: ignore[return-value]

    def __setitem__(self, i: int, value: Any) -> None:
        self.register_parameter(str(i % len(self)), _as_parameter("ParameterList", value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())  # type: ignore[arg-type]

    def extra_repr(self) -> str:
        """One line per parameter: its shape and dtype."""
        return "\n".join(f"  ({i}): Parameter containing: [{p.dtype} of size {tuple(p.shape)}]"
                         for i, p in enumerate(self))


class ParameterDict(DictView, Module):
    """A dict of parameters under their keys."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def update(self, parameters: Any) -> None:
        """Add (or replace) the parameters of a dict or of ``(key, parameter)`` pairs.

        As torch: an ``OrderedDict``, a ``ParameterDict`` or pairs keep their order; a plain dict's
        keys are taken sorted."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = list(parameters)
        for key, value in pairs:
            self[key] = value

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str) or not key or "." in key:
            raise KeyError(f"ParameterDict: a key must be a non-empty string without '.', got {key!r}")
        self.register_parameter(key, _as_parameter(f"ParameterDict[{key!r}]", value))

    def _held(self) -> dict[str, Any]:
        return self._parameters
