"""The grad-mode switch: the only global state in tinyattn.

While grad mode is off (inside ``with ta.no_grad():``) ops compute their results
but record no graph, so nothing is saved for a backward pass.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_grad_enabled: bool = True


def is_grad_enabled() -> bool:
    """Return True if ops currently record the graph for backward."""
    return _grad_enabled


def set_grad_enabled(mode: bool) -> None:
    """Turn graph recording on or off (prefer the context managers)."""
    global _grad_enabled
    _grad_enabled = bool(mode)


class _GradMode:
    """Context manager and decorator that sets grad mode, restoring it on exit."""

    mode: bool

    def __enter__(self) -> None:
        self._previous = is_grad_enabled()
        set_grad_enabled(self.mode)

    def __exit__(self, *exc_info: object) -> None:
        set_grad_enabled(self._previous)

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__():
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):
    """Disable graph recording: ``with ta.no_grad(): ...`` or ``@ta.no_grad()``."""

    mode = False


class enable_grad(_GradMode):
    """Re-enable graph recording, e.g. inside a ``no_grad`` block."""

    mode = True
