"""Checkpoint corner cases against torch: integers at every opcode's boundary, stride-0 and negative-stride
views, dtype views, empty tensors, and loading's refusals and accepted arguments."""

import io
import os
import zipfile

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

BOUNDARY_INTS = [0, 1, 255, 256, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32, 2**63 - 1, 2**63,
                 -(2**63), -(2**63) - 1, 2**200, -(2**200)]


def through(save, load, obj):
    buffer = io.BytesIO()
    save(obj, buffer)
    buffer.seek(0)
    return load(buffer)


def torch_load(f):
    return torch.load(f, weights_only=True)


def test_integers_at_every_opcode_boundary_round_trip_both_ways():
    assert through(ta.save, torch_load, BOUNDARY_INTS) == BOUNDARY_INTS
    assert through(torch.save, ta.load, BOUNDARY_INTS) == BOUNDARY_INTS
    assert through(ta.save, ta.load, BOUNDARY_INTS) == BOUNDARY_INTS


def test_views_torch_reads_with_their_strides_and_values(rng):
    base = rng.standard_normal((4, 6)).astype(np.float32)
    views = {
        "expanded": np.broadcast_to(base[0], (3, 6)),  # stride 0: one row, shared
        "reversed": base[::-1],  # a negative stride: written as a copy
        "dtype view": base.view(np.int32),  # another dtype over the same bytes: a copy of its own
        "transposed root": base.T.copy().T,  # a view of a non-contiguous root
        "one element": base[2:3, 4:5],
        "empty": base[:0],
        "empty 2": np.zeros((0, 3), np.float64),
        "scalar": np.float64(2.5) * np.ones(()),
    }
    back = through(ta.save, torch_load, {k: ta.from_numpy(np.array(v, copy=False)) if v.flags.writeable
                                         else ta.tensor(np.array(v)) for k, v in views.items()})
    for name, view in views.items():
        np.testing.assert_array_equal(back[name].numpy(), view, err_msg=name)
        assert back[name].dtype == torch.from_numpy(np.ascontiguousarray(view)).dtype, name
    assert back["one element"].storage_offset() == 2 * 6 + 4 and back["one element"].stride() == (6, 1)


def test_a_stride_0_tensor_saved_by_torch_loads_as_a_view():
    expanded = torch.arange(4.0).expand(3, 4)
    back = through(torch.save, ta.load, {"e": expanded})["e"]
    assert back.array.strides == (0, 4)  # a view of 4 floats, not 12
    np.testing.assert_array_equal(back.numpy(), expanded.numpy())
    mine = ta.arange(4.0).expand(3, 4)
    theirs = through(ta.save, torch_load, {"e": mine})["e"]
    assert theirs.stride() == (0, 1) and theirs.untyped_storage().nbytes() == 16


def test_load_refuses_what_it_cannot_read_and_accepts_torchs_arguments(tmp_path):
    path = tmp_path / "x.pt"
    torch.save({"w": torch.ones(2)}, path)
    for location in ("cpu", torch.device("cpu"), ta.device("cpu"), {"cuda:0": "cpu"}, lambda s, loc: s):
        np.testing.assert_array_equal(ta.load(path, map_location=location)["w"].numpy(), [1, 1])
    assert ta.load(path, mmap=True, weights_only=True)["w"].shape == (2,)
    with pytest.raises(TypeError, match="pickle_module and pickle arguments are not supported"):
        ta.load(path, pickle_module=__import__("pickle"))
    with pytest.raises(TypeError, match=r"\['encoding'\]"):
        ta.load(path, encoding="latin1")
    with zipfile.ZipFile(path) as z:
        records = {i.filename: z.read(i) for i in z.infolist()}
    prefix = next(k for k in records if k.endswith("data.pkl"))[: -len("data.pkl")]
    for name, change, message in [
        ("big-endian", {prefix + "byteorder": b"big"}, "written big-endian; only little-endian"),
        ("no pickle", {prefix + "data.pkl": None}, "holds no data.pkl record"),
        ("no byteorder", {prefix + "byteorder": None}, None),  # torch's older files have none: little-endian
    ]:
        edited = {k: v for k, v in {**records, **change}.items() if v is not None}
        target = tmp_path / f"{name}.pt"
        with zipfile.ZipFile(target, "w") as z:
            for k, v in edited.items():
                z.writestr(k, v)
        if message is None:
            np.testing.assert_array_equal(ta.load(target)["w"].numpy(), [1, 1])
        else:
            with pytest.raises(RuntimeError, match=message):
                ta.load(target)


def test_save_writes_its_temporary_file_beside_the_target(tmp_path, monkeypatch):
    seen = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: seen.append((a, b)) or real(a, b))
    target = tmp_path / "ckpt.pt"
    ta.save({"a": 1}, target)
    (temporary, final), = seen
    assert os.path.dirname(temporary) == str(tmp_path) and final == str(target)
    name = os.path.basename(temporary)
    assert name.startswith(".ckpt.pt.") and name.endswith(".tmp")  # hidden, and named after its target
    for argument in ({"pickle_protocol": 4}, {"_use_new_zipfile_serialization": False},
                     {"_disable_byteorder_record": True}, {"pickle_module": __import__("pickle")}):
        with pytest.raises(ValueError, match="only torch's default format"):
            ta.save({"a": 1}, target, **argument)
    with pytest.raises(FileNotFoundError):
        ta.save({"a": 1}, tmp_path / "missing" / "x.pt")
    assert sorted(os.listdir(tmp_path)) == ["ckpt.pt"]
