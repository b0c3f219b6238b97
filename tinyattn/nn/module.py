"""``Module``: parameters and sub-modules registered by attribute assignment.

``self.w = Parameter(...)`` and ``self.proj = Linear(...)`` are all it takes;
``parameters()``, ``state_dict()``, ``train()``/``eval()`` and ``to(dtype)``
then walk the tree of modules.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any, Iterable, Iterator

import numpy as np

from ..autograd import hooks
from ..autograd.devices import check_device
from ..autograd.tensor import Tensor, to_arguments
from . import module_hooks
from .parameter import Parameter


class Module:
    """Base class of every layer; subclasses set attributes in ``__init__`` and define ``forward``."""

    training: bool
    _parameters: dict[str, Parameter | None]  # set in __init__ past __setattr__, like training
    _modules: dict[str, Any]  # a Module, or None where one was set to None
    _buffers: dict[str, Tensor | None]  # tensors that are state but not parameters (register_buffer)
    _non_persistent: set[str]  # buffers left out of state_dict
    _hooks: module_hooks.ModuleHooks | None = None  # forward and backward hooks, once one is registered

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value: Any) -> None:
        params, modules = self.__dict__.get("_parameters"), self.__dict__.get("_modules")
        if params is None or modules is None:
            raise RuntimeError("call super().__init__() before assigning attributes of a Module")
        if isinstance(value, Parameter):
            modules.pop(name, None)
            params[name] = value
        elif isinstance(value, Module):
            params.pop(name, None)
            modules[name] = value
        elif name in params:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} to parameter {name!r} (use Parameter or None)")
            params[name] = None
        elif name in modules and value is None:
            modules[name] = None
        elif name in self.__dict__.get("_buffers", {}):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer {name!r} (a Tensor or None expected)")
            self._buffers[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        """``del module.weight``: the attribute, and the parameter, buffer or submodule it was, are gone (as torch:
        a plain tensor may then take its name, as weight normalisation and pruning do)."""
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent.discard(name)
        object.__delattr__(self, name)

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """torch's ``Module.compile()``: there is no compiler in tinyattn, so the module runs as it is."""

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` under ``name``; ``None`` records an absent parameter (e.g. no bias)."""
        self._parameters[name] = param
        object.__setattr__(self, name, param)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Keep ``tensor`` as state that is not a parameter (a causal mask, running statistics), as torch.

        It is reachable as ``self.name``, moved and cast by ``to()``, never given to an optimizer,
        and in ``state_dict()`` unless ``persistent=False``.
        """
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"register_buffer: buffer name must be a non-empty string without '.', got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: cannot assign {type(tensor).__name__} as buffer {name!r} "
                            "(a Tensor or None expected)")
        if name in self._parameters or name in self._modules or (hasattr(self, name) and name not in self._buffers):
            raise KeyError(f"register_buffer: attribute {name!r} already exists")
        self._buffers[name] = tensor
        (self._non_persistent.discard if persistent else self._non_persistent.add)(name)
        object.__setattr__(self, name, tensor)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation; subclasses override it."""
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``module(x)`` runs ``module.forward(x)`` (with the module's hooks, if it has any: ``module_hooks.py``)."""
        if self._hooks is None:
            return self.forward(*args, **kwargs)
        return module_hooks.call(self, args, kwargs)

    # -- hooks (module_hooks.py) -----------------------------------------------

    def register_forward_pre_hook(self, hook: Any, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> hooks.RemovableHandle:
        """Run ``hook(module, args)`` before each ``forward``.

        Args it returns replace the call's (``with_kwargs``: ``hook(module, args, kwargs)``, returning
        ``(args, kwargs)``)."""
        return module_hooks.add(self, "forward_pre", (hook, with_kwargs), prepend)

    def register_forward_hook(self, hook: Any, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> hooks.RemovableHandle:
        """Run ``hook(module, args, output)`` after each ``forward``.

        An output it returns replaces the call's (``with_kwargs``: ``hook(module, args, kwargs, output)``)."""
        return module_hooks.add(self, "forward", (hook, with_kwargs, always_call), prepend)

    def register_full_backward_pre_hook(self, hook: Any, prepend: bool = False) -> hooks.RemovableHandle:
        """Run ``hook(module, grad_output)`` once the gradients of the module's outputs are known.

        Gradients it returns replace them."""
        return module_hooks.add(self, "backward_pre", hook, prepend)

    def register_backward_hook(self, hook: Any) -> hooks.RemovableHandle:
        """torch's older backward hook, deprecated there: registered here as ``register_full_backward_hook``.

        torch's gives the gradients of the inputs of the module's last op; the full hook gives those of the
        module's own inputs, which is what the two agree on for a module of one op."""
        warnings.warn("register_backward_hook is deprecated (as in torch): registered as register_full_backward_hook, "
                      "whose grad_input holds the gradients of the module's inputs", FutureWarning, stacklevel=2)
        return self.register_full_backward_hook(hook)

    def register_full_backward_hook(self, hook: Any, prepend: bool = False) -> hooks.RemovableHandle:
        """Run ``hook(module, grad_input, grad_output)`` once the gradients of the module's inputs are known.

        Gradients it returns replace ``grad_input``."""
        return module_hooks.add(self, "backward", hook, prepend)

    # -- walking the tree ------------------------------------------------------

    def named_modules(self, prefix: str = "", remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module and every descendant, with dotted names (this one is ``""``); a shared one once."""
        seen: set[int] = set()
        stack: list[tuple[str, Module]] = [(prefix, self)]  # depth first, each module before its children
        while stack:
            name, module = stack.pop()
            if remove_duplicate:
                if id(module) in seen:
                    continue
                seen.add(id(module))
            yield name, module
            if module._modules:
                children = [(f"{name}.{n}" if name else n, c) for n, c in module._modules.items() if c is not None]
                stack += reversed(children)  # (popped in the order they were registered)

    def modules(self) -> Iterator[Module]:
        """This module and every descendant."""
        for _, m in self.named_modules():
            yield m

    def children(self) -> Iterator[Module]:
        """The direct sub-modules."""
        for _, child in self.named_children():
            yield child

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct sub-modules with their names."""
        for name, child in self._modules.items():
            if child is not None:
                yield name, child

    def apply(self, fn: Any) -> Module:
        """Call ``fn`` on every sub-module, then on this one (nanoGPT's ``self.apply(self._init_weights)``)."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """Every buffer with its dotted name (``recurse=False``: this module's only)."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """Every parameter with its dotted name, e.g. ``out_proj.weight`` (``recurse=False``: this module's only).

        A parameter shared by two modules (tied weights) comes once, under its first name,
        as in torch, so an optimizer steps it once and ``clip_grad_norm_`` counts it once.
        """
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def _named_members(self, table: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Any]]:
        """The tensors in each module's ``table`` (``_parameters`` or ``_buffers``) with their dotted names; a tensor
        held twice comes once, under its first name, unless ``remove_duplicate`` is False."""
        seen: set[int] = set()
        walk = self.named_modules(prefix, remove_duplicate=False) if recurse else iter([(prefix, self)])
        for module_prefix, module in walk:  # (every name of a shared module)
            for name, t in getattr(module, table).items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield (f"{module_prefix}.{name}" if module_prefix else name), t

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter (``recurse=False``: this module's only)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's ``.grad`` (``None``, or zeros with ``set_to_none=False``), as torch.

        It walks each module's own parameters: one that two modules share is forgotten twice, to the same effect, so
        the walk needs neither the parameters' dotted names nor the set of parameters seen that ``parameters()`` keeps.
        """
        for module in self.modules():
            forget_grads([p for p in module._parameters.values() if p is not None], set_to_none)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Switch gradients on or off for every parameter (freezing layers); returns the module."""
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def train(self, mode: bool = True) -> Module:
        """Training mode (dropout active) for this module and its descendants."""
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode (dropout is the identity)."""
        return self.train(False)

    def half(self) -> Module:
        """Cast the floating-point parameters and buffers to float16: ``to(float16)``."""
        return self.to(np.float16)

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move to a device and/or cast floating-point parameters (and gradients) to a dtype, in place, as torch.

        ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(tensor)``; only the CPU exists here, and
        ``None`` changes nothing. Integer parameters keep their dtype (torch casts floats only).
        """
        dtype, _ = to_arguments("Module.to", args, kwargs)
        if dtype is None:
            return self  # a device only (the CPU): nothing moves
        if dtype.kind != "f":
            raise TypeError(f"Module.to: only floating point dtypes are accepted, but got desired dtype={dtype}")
        for b in self.buffers():
            if b.dtype.kind == "f":
                b.array = b.array.astype(dtype)
        for p in self.parameters():
            if p.dtype.kind == "f":
                p.array = p.array.astype(dtype)
                if p.grad is not None:
                    p.grad.array = p.grad.array.astype(dtype)
        return self

    def cpu(self) -> Module:
        """The module itself: its parameters are on the CPU."""
        return self

    def cuda(self, device: Any = None) -> Module:
        """Refused: there is no CUDA device here."""
        check_device("cuda", "cuda" if device is None else device)
        return self

    def double(self) -> Module:
        """Cast every parameter to float64."""
        return self.to(np.float64)

    def float(self) -> Module:
        """Cast every parameter to float32."""
        return self.to(np.float32)

    # -- saving and loading ----------------------------------------------------

    def state_dict(self) -> OrderedDict[str, Tensor]:
        """Name -> each parameter and persistent buffer, detached (sharing memory, as torch's).

        Module by module: a module's parameters, then its buffers, then its children, as torch;
        a shared parameter under each of its names. ``tinyattn.save`` writes it to a file."""
        return OrderedDict((name, t.detach()) for name, t in self._state())

    def _state(self) -> Iterator[tuple[str, Tensor]]:
        """What ``state_dict`` holds: every parameter and persistent buffer, under every name."""
        for prefix, module in self.named_modules(remove_duplicate=False):
            for name, t in [*module._parameters.items(), *((n, b) for n, b in module._buffers.items()
                                                            if n not in module._non_persistent)]:
                if t is not None:
                    yield (f"{prefix}.{name}" if prefix else name), t

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Copy arrays (NumPy, tinyattn or torch tensors) into the parameters in place, keeping their dtypes.

        Raises ``RuntimeError`` listing every missing key, unexpected key (when
        ``strict``) and shape mismatch.
        """
        own = dict(self._state())
        arrays = {name: to_numpy(value) for name, value in state_dict.items()}
        problems = []
        missing = [k for k in own if k not in arrays]
        unexpected = [k for k in arrays if k not in own]
        if strict and missing:
            problems.append("missing keys: " + ", ".join(missing))
        if strict and unexpected:
            problems.append("unexpected keys: " + ", ".join(unexpected))
        for name, array in arrays.items():
            if name in own and array.shape != own[name].shape:
                problems.append(f"size mismatch for {name}: expected shape {own[name].shape}, got {array.shape}")
        if problems:
            raise RuntimeError(f"load_state_dict into {type(self).__name__}: " + "; ".join(problems))
        for name, array in arrays.items():
            if name in own:  # in place, as torch's copy_: whoever holds the tensor sees the new values
                own[name].array[...] = array
                own[name]._version += 1

    # -- printing ----------------------------------------------------------------

    def extra_repr(self) -> str:
        """The constructor arguments shown in ``repr`` (subclasses override)."""
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, child in self._modules.items():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ("\n" + "\n".join(lines) + "\n)" if lines else ")")


def forget_grads(params: Iterable[Tensor], set_to_none: bool) -> None:
    """``zero_grad`` of a module and of an optimizer: each ``.grad`` set to None, or zeroed in place (as torch:
    the same tensor and memory, so a view or ``.numpy()`` of it reads the zeros)."""
    for p in params:
        if set_to_none:
            p.grad = None
        elif p.grad is not None:
            if p.grad.requires_grad:  # a .grad assigned by hand may be in a graph: cut out first, as torch
                # (whose detach_ keeps the tensor object; here a detached tensor on the same memory replaces it)
                p.grad = p.grad.detach()
            p.grad.zero_()


def to_numpy(value: Any) -> np.ndarray:
    """An ndarray from a NumPy array, a tinyattn tensor or a torch tensor."""
    if hasattr(value, "detach"):  # a tensor (tinyattn's or torch's), perhaps requiring grad
        value = value.detach()
    return np.asarray(value)


class ModuleList(Module):
    """A list of modules, registered as ``"0"``, ``"1"``, ..."""

    def __init__(self, modules: Iterable[Module] = ()) -> None:
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module: Module) -> ModuleList:
        """Add a module at the end."""
        setattr(self, str(len(self._modules)), module)
        return self

    def __getitem__(self, i: int) -> Module:
        return list(self._modules.values())[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class DictView:
    """The dict side of ``ModuleDict`` and ``ParameterDict``: what they hold, by key, in insertion order.

    A subclass says where its items live (``_held``) and how one is set (``__setitem__``).
    """

    def _held(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self._held()[key]

    def __delitem__(self, key: str) -> None:
        del self._held()[key]
        object.__delattr__(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self._held()

    def __len__(self) -> int:
        return len(self._held())

    def __iter__(self) -> Iterator[str]:
        return iter(self._held())

    def keys(self) -> Any:
        """The keys, in insertion order."""
        return self._held().keys()

    def values(self) -> Any:
        """The items, in insertion order."""
        return self._held().values()

    def items(self) -> Any:
        """``(key, item)`` pairs, in insertion order."""
        return self._held().items()


class ModuleDict(DictView, Module):
    """A dict of modules, registered under their keys (nanoGPT's ``transformer = nn.ModuleDict(dict(wte=...))``)."""

    def __init__(self, modules: Any = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def update(self, modules: Any) -> None:
        """Add (or replace) the modules of a dict or of ``(key, module)`` pairs."""
        for key, module in (modules.items() if hasattr(modules, "items") else modules):
            self[key] = module

    def _held(self) -> dict[str, Any]:
        return self._modules

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict: {key!r} must be a Module, got {type(module).__name__}")
        setattr(self, key, module)


class Sequential(ModuleList):
    """Modules applied one after another."""

    def __init__(self, *modules: Module) -> None:
        super().__init__(modules)

    def forward(self, x: Any) -> Any:
        """Feed ``x`` through each module in order."""
        for m in self:
            x = m(x)
        return x
