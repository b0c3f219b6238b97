"""``tinyattn.save`` / ``tinyattn.load`` without torch: round trips, sharing, refusals, attacks, atomic saves."""

import io
import os
import pickle
import struct
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.serialization import UnsafeCheckpointError

DTYPES = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_]


def round_trip(obj):
    buffer = io.BytesIO()
    ta.save(obj, buffer)
    buffer.seek(0)
    return ta.load(buffer)


@pytest.mark.parametrize("dtype", DTYPES)
def test_each_dtype_round_trips_with_its_values(rng, dtype):
    array = (rng.standard_normal((3, 4)) * 50).astype(dtype)
    back = round_trip({"t": ta.from_numpy(array.copy())})["t"]
    assert isinstance(back, ta.Tensor) and back.dtype == array.dtype
    np.testing.assert_array_equal(back.numpy(), array)


def test_views_keep_sharing_their_storage_with_offsets_and_strides():
    base = ta.arange(24.0).reshape(4, 6)
    back = round_trip({"base": base, "window": base[1:3, 2:5], "columns": base[:, ::2], "t": base.t()})
    np.testing.assert_array_equal(back["window"].numpy(), base[1:3, 2:5].numpy())
    np.testing.assert_array_equal(back["columns"].numpy(), base[:, ::2].numpy())
    np.testing.assert_array_equal(back["t"].numpy(), base.numpy().T)
    back["base"][2, 2] = -1.0  # one storage after loading: every view sees the write
    assert back["window"][1, 0].item() == -1.0 and back["columns"][2, 1].item() == -1.0
    assert back["t"][2, 2].item() == -1.0


def test_containers_numbers_and_parameters_come_back_as_saved():
    value = {
        "ints": [0, 255, 256, -1, 2**31, -(2**40), 2**70],
        "floats": (0.1, -2.5e-300, float("inf")),
        "text": "ünïcode",
        "none": None,
        "flags": [True, False],
        "nested": {"a": [(1, "x")], 3: {}},
        "ordered": OrderedDict([("z", 1), ("a", 2)]),
        "param": nn.Parameter(np.ones(3)),
        "grad": ta.ones(2, requires_grad=True),
        "scalar": ta.tensor(3.5),
        "empty": ta.zeros(0, 3),
        "numpy": np.arange(4),
        "bytes": b"\x00\xffabc",
        "set": {3, 1, 2},
        "complex": 1.5 - 2j,
        "numpy scalars": [np.int64(7), np.float32(0.5), np.True_],
    }
    back = round_trip(value)
    for key in ("ints", "floats", "text", "none", "flags", "nested", "bytes", "set", "complex"):
        assert back[key] == value[key] and type(back[key]) is type(value[key])
    assert isinstance(back["ordered"], OrderedDict) and list(back["ordered"]) == ["z", "a"]
    assert isinstance(back["param"], nn.Parameter) and back["param"].requires_grad
    assert back["grad"].requires_grad and not isinstance(back["grad"], nn.Parameter)
    assert back["scalar"].shape == () and back["scalar"].item() == 3.5
    assert back["empty"].shape == (0, 3)
    assert back["numpy scalars"] == [7, 0.5, True] and type(back["numpy scalars"][2]) is bool
    assert isinstance(back["numpy"], ta.Tensor)  # torch's weights-only format has tensors, not NumPy arrays
    np.testing.assert_array_equal(back["numpy"].numpy(), np.arange(4))


def test_a_model_state_dict_loads_into_a_fresh_model(tmp_path, rng):
    ta.manual_seed(0)
    model = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True, dropout=0.0)
    path = tmp_path / "model.pt"
    ta.save(model.state_dict(), path)
    ta.manual_seed(1)
    other = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True, dropout=0.0)
    other.load_state_dict(ta.load(path))
    x = ta.tensor(rng.standard_normal((2, 3, 8)).astype(np.float32))
    np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())


def test_refusals_name_what_is_wrong(tmp_path):
    with pytest.raises(TypeError, match="dtype complex128"):
        ta.save(np.zeros(2, dtype=complex), tmp_path / "m.pt")
    assert not os.listdir(tmp_path)  # nothing half-written
    ta.save({"a": 1}, tmp_path / "ok.pt")
    assert ta.load(tmp_path / "ok.pt", weights_only=False) == {"a": 1}
    with pytest.raises(RuntimeError, match="'cuda' is not available"):
        ta.load(tmp_path / "ok.pt", map_location="cuda")
    assert ta.load(tmp_path / "ok.pt", map_location="cpu") == {"a": 1}
    (tmp_path / "old.pt").write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(RuntimeError, match="not a checkpoint in torch's zip format"):
        ta.load(tmp_path / "old.pt")


# -- attacks: a file that tries to run code, or to read outside its storage ---------------------------


def archive_with(pickled: bytes, storages: dict[str, bytes] | None = None) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("archive/data.pkl", pickled)
        z.writestr("archive/byteorder", "little")
        for key, raw in (storages or {}).items():
            z.writestr(f"archive/data/{key}", raw)
        z.writestr("archive/version", "3\n")
    buffer.seek(0)
    return buffer


class RunsACommand:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class CallsEval:
    def __reduce__(self):
        return (eval, ("__import__('os').system('touch /tmp/never')",))


@pytest.mark.parametrize("protocol", [2, 4])
def test_a_file_that_would_run_a_command_is_refused_and_nothing_runs(tmp_path, protocol):
    marker = tmp_path / "pwned"
    evil = pickle.dumps({"weight": [1.0], "payload": RunsACommand(marker)}, protocol=protocol)
    assert pickle.loads(evil) is not None and marker.exists()  # the attack works on a plain unpickler
    marker.unlink()
    with pytest.raises(UnsafeCheckpointError, match=r"names the global (posix|os)\.system.*it was not called"):
        ta.load(archive_with(evil))
    assert not marker.exists()


@pytest.mark.parametrize("attack", [
    CallsEval(),
    pickle.loads(pickle.dumps(getattr)),  # builtins.getattr: the step to reach anything from an admitted object
])
def test_other_globals_are_refused_by_name(attack):
    module = "builtins"
    with pytest.raises(UnsafeCheckpointError, match=rf"the global {module}\.(eval|getattr)"):
        ta.load(archive_with(pickle.dumps([attack], protocol=2)))


def forged_tensor(offset, size, stride, numel, raw):
    """A hand-made data.pkl: one tensor over storage "0"."""
    ints = b"".join(b"J" + struct.pack("<i", n) for n in size)
    strides = b"".join(b"J" + struct.pack("<i", n) for n in stride)
    pickled = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\n"
               b"X\x01\x00\x00\x000X\x03\x00\x00\x00cpu" + b"J" + struct.pack("<i", numel) + b"tQ"
               + b"J" + struct.pack("<i", offset) + b"(" + ints + b"t(" + strides + b"t\x89"
               + b"ccollections\nOrderedDict\n)RtR.")
    return archive_with(pickled, {"0": raw})


def test_a_forged_tensor_is_read_when_it_fits_its_storage():
    back = ta.load(forged_tensor(1, (2, 2), (2, 1), 5, np.arange(5, dtype="<f4").tobytes()))
    np.testing.assert_array_equal(back.numpy(), [[1, 2], [3, 4]])


@pytest.mark.parametrize(("offset", "size", "stride", "numel", "message"), [
    (0, (3, 3), (3, 1), 4, "reaches past its storage of 4 elements"),  # would read 5 floats of other memory
    (2, (4,), (1,), 4, "reaches past its storage"),
    (0, (2,), (-1,), 4, "malformed"),
    (-1, (2,), (1,), 4, "malformed"),
    (0, (2,), (1,), 9, "holds 16 bytes, expected 9 elements"),
])
def test_a_forged_tensor_reaching_outside_its_storage_is_refused(offset, size, stride, numel, message):
    with pytest.raises(ValueError, match=message):
        ta.load(forged_tensor(offset, size, stride, numel, np.arange(4, dtype="<f4").tobytes()))


# -- atomic saves ---------------------------------------------------------------------------------------


def test_a_save_interrupted_while_writing_keeps_the_old_file_byte_for_byte(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    ta.save({"step": 1, "w": ta.ones(1000)}, path)
    before = path.read_bytes()
    calls = {"n": 0}
    real = zipfile.ZipFile.writestr

    def disk_full(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:  # data.pkl and byteorder written, then the disk fills up
            raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "writestr", disk_full)
    with pytest.raises(OSError, match="No space left"):
        ta.save({"step": 2, "w": ta.zeros(1000)}, path)
    assert calls["n"] == 3
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.pt"]  # no partial file left behind
    monkeypatch.undo()
    assert ta.load(path)["step"] == 1
    ta.save({"step": 2}, path)
    assert ta.load(path) == {"step": 2} and os.listdir(tmp_path) == ["ckpt.pt"]


def test_storages_start_on_64_byte_boundaries(tmp_path):
    ta.save({"a": ta.ones(3), "b": ta.zeros(5, dtype=ta.float64), "c": ta.tensor([True])}, tmp_path / "x.pt")
    raw = (tmp_path / "x.pt").read_bytes()
    with zipfile.ZipFile(tmp_path / "x.pt") as z:
        for info in z.infolist():
            name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26: info.header_offset + 30])
            assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0, info.filename
