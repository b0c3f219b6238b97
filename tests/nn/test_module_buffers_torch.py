"""Buffers as torch keeps them: registering (and what is refused), listing with names, prefixes,
recursion and duplicates, ``to`` and ``load_state_dict`` on them; each behaviour run in both libraries."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn as tnn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

LIBS = [(ta, tnn), (torch, torch.nn)]


def tree(lib, nn):
    """A module with a float buffer, a None buffer before an int one, and a child sharing the first buffer."""
    root, child = nn.Module(), nn.Module()
    root.register_buffer("scale", lib.ones(2))
    root.register_buffer("absent", None)
    root.register_buffer("steps", lib.zeros(1, dtype=lib.int64))
    child.register_buffer("shared", root.scale)
    child.register_buffer("own", lib.full((3,), 2.0))
    root.child = child
    return root


def listing(module, **kwargs):
    return [(name, tuple(b.shape)) for name, b in module.named_buffers(**kwargs)]


@pytest.mark.parametrize("kwargs", [{}, {"recurse": False}, {"prefix": "model"}, {"prefix": "m", "recurse": False},
                                    {"remove_duplicate": False}, {"prefix": "p", "remove_duplicate": False}])
def test_named_buffers_list_the_same_names_as_torch(kwargs):
    ours, theirs = (listing(tree(lib, nn), **kwargs) for lib, nn in LIBS)
    assert ours == theirs and ours


def test_buffers_follow_recurse_as_torch():
    for recurse in (True, False):
        ours, theirs = ([tuple(b.shape) for b in tree(lib, nn).buffers(recurse=recurse)] for lib, nn in LIBS)
        assert ours == theirs
    ours, theirs = ([tuple(b.shape) for b in tree(lib, nn).buffers()] for lib, nn in LIBS)
    assert ours == theirs


@pytest.mark.parametrize(("name", "value", "error"), [
    ("", "tensor", KeyError), ("a.b", "tensor", KeyError), (1, "tensor", TypeError), ("w", [1.0], TypeError),
    ("w", np.ones(2), TypeError), ("weight", "tensor", KeyError), ("inner", "tensor", KeyError),
    ("training", "tensor", KeyError),
])
def test_register_buffer_refuses_what_torch_refuses(name, value, error):
    for lib, nn in LIBS:
        module = nn.Linear(2, 2)
        module.inner = nn.Linear(1, 1)
        with pytest.raises((KeyError, TypeError)) as raised:
            module.register_buffer(name, lib.ones(1) if isinstance(value, str) else value)
        if lib is ta:  # (torch raises TypeError for a non-str name; KeyError for the rest, as here)
            assert raised.type is error or (name == 1 and raised.type is KeyError)
        else:
            assert raised.type in (KeyError, TypeError)


def test_an_existing_buffer_may_be_registered_again():
    for lib, nn in LIBS:
        module = tree(lib, nn)
        module.register_buffer("scale", lib.zeros(2))
        assert module.scale.tolist() == [0.0, 0.0]


def test_module_to_converts_float_buffers_and_keeps_int_ones_as_torch():
    for lib, nn in LIBS:
        module = tree(lib, nn).to(lib.float64)
        assert module.scale.dtype == lib.float64 and module.child.own.dtype == lib.float64
        assert module.steps.dtype == lib.int64


def test_module_cuda_is_refused_naming_cuda():
    with pytest.raises(RuntimeError, match="^cuda: device 'cuda' is not available"):
        tnn.Linear(2, 2).cuda()


def test_load_state_dict_bumps_each_tensor_s_version_once_per_load_as_torch():
    versions = []
    for _, nn in LIBS:
        module = nn.Linear(2, 2)
        state = {k: v.clone() for k, v in module.state_dict().items()}
        before = module.weight._version
        module.load_state_dict(state)
        module.load_state_dict(state)
        versions.append(module.weight._version - before)
    assert versions == [2, 2]


def test_module_dict_takes_pairs_as_torch():
    for _, nn in LIBS:
        pairs = nn.ModuleDict([("b", nn.Linear(1, 1)), ("a", nn.Linear(1, 2))])
        assert list(pairs.keys()) == ["b", "a"]
