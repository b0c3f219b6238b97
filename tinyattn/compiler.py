"""``torch.compile`` without a compiler: the function or module comes back as it is, and runs eagerly.

torch compiles a model into fused kernels; the results are the same numbers, sooner. tinyattn has no
compiler (its ops are NumPy's), so ``compile(model)`` returns ``model`` itself, ``@compile`` and
``@compile(mode=...)`` decorate a function without changing it, and a program written for torch 2 runs
unchanged. ``Module.compile()`` likewise does nothing.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["compile", "is_compiling"]


def compile(model: Any = None, *, fullgraph: bool = False, dynamic: Any = None, backend: Any = "inductor",
            mode: Any = None, options: Any = None, disable: bool = False) -> Any:
    """Return ``model`` (a function or a Module) unchanged: there is no compiler here, so it runs eagerly.

    Without ``model`` (``@compile(mode="max-autotune")``), return a decorator that does the same."""
    if model is None:
        def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
            return function

        return decorate
    if not callable(model):
        raise RuntimeError(f"compile: expected a callable (a function or a Module), got {type(model).__name__}")
    return model


def is_compiling() -> bool:
    """False: nothing here is being compiled (torch's ``torch.compiler.is_compiling``)."""
    return False
