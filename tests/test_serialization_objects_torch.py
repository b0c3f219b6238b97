"""Whole objects in checkpoints, and copies of what trains: as torch.

``save(model)`` pickles the model whole; ``load`` refuses it by default (weights-only, torch's
default since 2.6) naming the class, and reads it with ``weights_only=False`` or once the class is
allowed (``add_safe_globals``, ``safe_globals``). A file that would run code is refused before
anything in it is called. ``copy.deepcopy`` and ``pickle`` of a model with its optimizer keep
training exactly as the original.
"""

import argparse
import copy
import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import serialization

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.LayerNorm(5), lib.nn.ReLU(), lib.nn.Linear(5, 2))


def _round_trip(obj, **load_args):
    buffer = io.BytesIO()
    ta.save(obj, buffer)
    buffer.seek(0)
    return ta.load(buffer, **load_args)


def test_a_whole_model_is_refused_by_default_and_read_with_weights_only_false_as_torch():
    for lib in (ta, torch):
        buffer = io.BytesIO()
        lib.save(_model(lib), buffer)
        buffer.seek(0)
        with pytest.raises(Exception, match="(?i)weights.only load failed"):
            lib.load(buffer)
    model = _model(ta)
    with pytest.raises(serialization.UnsafeCheckpointError, match="names the global tinyattn.nn.module.Sequential"):
        _round_trip(model)
    loaded = _round_trip(model, weights_only=False)
    x = ta.randn(4, 3)
    assert type(loaded) is type(model) and repr(loaded) == repr(model)
    np.testing.assert_array_equal(loaded(x).detach().numpy(), model(x).detach().numpy())
    assert all(p.requires_grad for p in loaded.parameters())


def test_allowing_the_classes_reads_it_weights_only():
    model = _model(ta)
    classes = [ta.nn.Sequential, ta.nn.Linear, ta.nn.LayerNorm, ta.nn.ReLU]
    with serialization.safe_globals(classes):
        loaded = _round_trip(model)
        assert set(serialization.get_safe_globals()) >= set(classes)
    assert not set(serialization.get_safe_globals()) & set(classes)  # (only inside the block)
    with pytest.raises(serialization.UnsafeCheckpointError):
        _round_trip(model)
    serialization.add_safe_globals(classes)
    try:
        again = _round_trip(model)
    finally:
        serialization.clear_safe_globals()
    x = ta.randn(2, 3)
    for m in (loaded, again):
        np.testing.assert_array_equal(m(x).detach().numpy(), model(x).detach().numpy())


def test_a_dict_of_mixed_objects_as_torch():
    args = argparse.Namespace(lr=0.1, epochs=3, name="run")
    for lib in (ta, torch):
        buffer = io.BytesIO()
        lib.save({"args": args, "weights": _model(lib).state_dict(), "step": 7}, buffer)
        buffer.seek(0)
        with pytest.raises(Exception, match="(?i)weights.only load failed"):
            lib.load(buffer)
        buffer.seek(0)
        loaded = lib.load(buffer, weights_only=False)
        assert loaded["args"] == args and loaded["step"] == 7
    with serialization.safe_globals([argparse.Namespace]):
        assert _round_trip({"args": args})["args"] == args


def test_a_file_that_would_run_code_is_refused_before_anything_in_it_is_called(tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    path = tmp_path / "evil.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({"weights": Payload()}, protocol=2))
        archive.writestr("archive/byteorder", "little")
        archive.writestr("archive/version", "3\n")
    with pytest.raises(serialization.UnsafeCheckpointError, match="names the global posix.system"):
        ta.load(path)
    assert not marker.exists()
    with pytest.raises(Exception, match="(?i)weights.only"):
        torch.load(path)
    assert not marker.exists()


def _train(model, opt, steps, seed):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x, y = ta.tensor(rng.standard_normal((8, 3))), ta.tensor(rng.integers(0, 2, 8))
        opt.zero_grad()
        ta.nn.functional.cross_entropy(model(x.float()), y).backward()
        opt.step()


@pytest.mark.parametrize("how", ["deepcopy", "pickle", "save"])
def test_a_copied_model_and_optimizer_keep_training_exactly_as_the_original(how):
    model = _model(ta)
    opt = ta.optim.Adam(model.parameters(), lr=0.01)
    _train(model, opt, 3, seed=1)
    if how == "deepcopy":
        model2, opt2 = copy.deepcopy((model, opt))
    elif how == "pickle":
        model2, opt2 = pickle.loads(pickle.dumps((model, opt)))
    else:
        model2, opt2 = _round_trip((model, opt), weights_only=False)
    assert opt2.param_groups[0]["params"][0] is next(model2.parameters())  # the copy optimizes the copy
    _train(model, opt, 4, seed=2)
    _train(model2, opt2, 4, seed=2)
    for a, b in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert any(not np.array_equal(a.detach().numpy(), b.detach().numpy())
               for a, b in zip(model.parameters(), _model(ta).parameters()))  # (it did train)
