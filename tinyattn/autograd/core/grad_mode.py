"""The two switches of autograd, its only global state besides the random generator.

* **Grad mode.** While it is off (inside ``with ta.no_grad():``) ops compute their
  results but record no graph, so nothing is saved for a backward pass.
* **The recorder.** Off unless the explainer's ``trace()`` turns it on; then every
  op tells it what it recorded and the engine tells it every backward step.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Protocol, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_grad_enabled: bool = True


def is_grad_enabled() -> bool:
    """Return True if ops currently record the graph for backward."""
    return _grad_enabled


class set_grad_enabled:
    """Turn graph recording on or off: now (``ta.set_grad_enabled(False)``), or for a ``with`` block, as torch."""

    def __init__(self, mode: bool) -> None:
        global _grad_enabled
        self._previous, _grad_enabled = _grad_enabled, bool(mode)

    def __enter__(self) -> None:
        """The mode was set when the object was made; the block runs with it."""

    def __exit__(self, *exc_info: object) -> None:
        global _grad_enabled
        _grad_enabled = self._previous


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


class inference_mode(_GradMode):
    """torch's faster ``no_grad`` for inference; here the same as ``no_grad`` (``mode=False``: recording on)."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = not mode


# ---------------------------------------------------------------------------
# The recorder: off unless the explainer's ``trace()`` turns it on
# ---------------------------------------------------------------------------


class Recorder(Protocol):
    """What ``trace()`` listens with. Ops and the engine call it only while one is switched on."""

    def forward(self, node: Any, args: tuple[Any, ...], output: Any) -> None:
        """An op just recorded ``node`` for ``output`` from ``args`` (tensors and constants)."""

    def backward(self, node: Any, grad_output: Any, grad_inputs: tuple[Any, ...]) -> None:
        """``node``'s backward just turned ``grad_output`` into ``grad_inputs``."""

    def begin_backward_of(self, node: Any) -> None:
        """``node``'s backward starts running as recorded ops (a gradient to be differentiated in turn): what is
        recorded until ``end_backward_of(node)`` is part of its formula."""

    def end_backward_of(self, node: Any) -> None:
        """``node``'s backward, recorded as ops, is done."""


_recorder: Recorder | None = None


def recorder() -> Recorder | None:
    """The recorder switched on, or None."""
    return _recorder


def set_recorder(recorder: Recorder | None) -> Recorder | None:
    """Switch ``recorder`` on (None: off); return the one it replaces."""
    global _recorder
    previous, _recorder = _recorder, recorder
    return previous


def note_forward(node: Any, inputs: tuple[Any, ...], output: Any) -> None:
    """Tell the recorder, if one is on, that an op recorded ``node`` for ``output`` from ``inputs``."""
    if _recorder is not None:
        _recorder.forward(node, inputs, output)


def note_backward(node: Any, grad_output: Any, grad_inputs: tuple[Any, ...]) -> None:
    """Tell the recorder, if one is on, that ``node``'s backward turned ``grad_output`` into ``grad_inputs``."""
    if _recorder is not None:
        _recorder.backward(node, grad_output, grad_inputs)
