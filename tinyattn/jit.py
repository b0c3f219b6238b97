"""``torch.jit`` as far as it means anything without a compiler: annotations and decorators that pass through.

Code written for TorchScript marks constants ``Final``, helpers ``@torch.jit.ignore`` or
``@torch.jit.unused``, and checks ``torch.jit.is_scripting()``. Here nothing is compiled: the
annotations are Python's, the decorators return what they decorate, and ``script`` returns its
function or module unchanged, so the program runs eagerly, as torch's does before scripting.
``trace``, ``save`` and ``load`` would need a compiled graph: they say so.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar  # (Final: Python's, as torch.jit.Final is)

F = TypeVar("F")

__all__ = ["Final", "export", "ignore", "interface", "is_scripting", "is_tracing", "load", "save", "script",
           "trace", "unused"]


def is_scripting() -> bool:
    """False: nothing here runs as TorchScript."""
    return False


def is_tracing() -> bool:
    """False: nothing here is being traced."""
    return False


def script(obj: F, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None, example_inputs: Any = None) -> F:
    """``obj`` itself: a function or module runs eagerly (tinyattn has no TorchScript compiler)."""
    return obj


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``@torch.jit.ignore`` (with or without arguments): the function unchanged."""
    return drop if callable(drop) else (lambda fn: fn)


def unused(fn: F) -> F:
    """``@torch.jit.unused``: the function unchanged."""
    return fn


def export(fn: F) -> F:
    """``@torch.jit.export``: the method unchanged."""
    return fn


def interface(obj: F) -> F:
    """``@torch.jit.interface``: the class unchanged."""
    return obj


def _no_compiler(what: str) -> RuntimeError:
    return RuntimeError(f"torch.jit.{what}: tinyattn has no TorchScript compiler, so there is no graph to "
                        f"{what}; run the model eagerly, and save its weights with torch.save(model.state_dict(), ...)")


def trace(func: Any, example_inputs: Any = None, *args: Any, **kwargs: Any) -> Any:
    """Refused: tracing records a compiled graph, which tinyattn does not have."""
    raise _no_compiler("trace")


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    """Refused: a TorchScript archive holds a compiled graph."""
    raise _no_compiler("save")


def load(f: Any, map_location: Any = None, _extra_files: Any = None) -> Any:
    """Refused: a TorchScript archive holds a compiled graph."""
    raise _no_compiler("load")
