"""Checkpoints across the two programs: torch reads what tinyattn saved, tinyattn (without torch) reads torch's."""

import os
import pickle
import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.serialization import UnsafeCheckpointError

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

DTYPES = ["float16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool"]


def test_torch_reads_what_tinyattn_saved(tmp_path, rng):
    base = ta.tensor(rng.standard_normal((4, 6)).astype(np.float32))
    arrays = {name: (rng.standard_normal((2, 3)) * 40).astype(name) for name in DTYPES}
    value = {
        "tensors": {name: ta.from_numpy(a) for name, a in arrays.items()},
        "base": base, "window": base[1:3, 2:5], "every_other": base[:, ::2], "t": base.t(),
        "param": nn.Parameter(np.arange(3.0)),
        "mixed": [1, -2**40, 2.5, "s", None, (True, False), OrderedDict(a=1), b"\x00\xff", {2, 1}, 2 - 1j],
    }
    ta.save(value, tmp_path / "ours.pt")
    theirs = torch.load(tmp_path / "ours.pt", weights_only=True)
    for name, a in arrays.items():
        assert theirs["tensors"][name].dtype == getattr(torch, name)
        np.testing.assert_array_equal(theirs["tensors"][name].numpy(), a)
    np.testing.assert_array_equal(theirs["window"].numpy(), base[1:3, 2:5].numpy())
    np.testing.assert_array_equal(theirs["t"].numpy(), base.numpy().T)
    assert theirs["window"].stride() == (6, 1) and theirs["window"].storage_offset() == 8
    assert theirs["every_other"].stride() == (6, 2) and theirs["t"].stride() == (1, 6)
    theirs["base"][2, 2] = 100.0  # one storage in torch too
    assert theirs["window"][1, 0].item() == 100.0 and theirs["t"][2, 2].item() == 100.0
    assert isinstance(theirs["param"], torch.nn.Parameter) and theirs["param"].requires_grad
    assert theirs["mixed"] == value["mixed"] and isinstance(theirs["mixed"][6], OrderedDict)


def test_a_tinyattn_model_runs_in_torch_from_the_file(tmp_path, rng):
    ours = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    ta.save(ours.state_dict(), tmp_path / "model.pt")
    theirs = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    theirs.load_state_dict(torch.load(tmp_path / "model.pt", weights_only=True))
    x = rng.standard_normal((2, 5, 8)).astype(np.float32)
    np.testing.assert_allclose(theirs(torch.from_numpy(x)).detach().numpy(), ours(ta.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


# -- torch's files, read where torch cannot be imported ------------------------------------------------

READER = r"""
import pickle, sys
import numpy as np
sys.modules["torch"] = None  # importing torch now fails, as on a machine without it
try:
    import torch
except ImportError:
    pass
else:
    raise SystemExit("torch was importable")
import tinyattn as ta

def plain(x):
    if isinstance(x, ta.Tensor):
        return ("Parameter" if isinstance(x, ta.nn.Parameter) else "Tensor", x.detach().numpy().copy(), x.requires_grad)
    if isinstance(x, dict):
        return (type(x).__name__, [(k, plain(v)) for k, v in x.items()])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [plain(v) for v in x])
    return x

out = {}
for name in sys.argv[2:]:
    out[name] = plain(ta.load(name, map_location="cpu" if name.endswith("mapped.pt") else None))
shared = ta.load("shared.pt")
shared["base"][1, 2] = -7.0
out["shared writes seen"] = [shared["window"][0, 0].item(), shared["t"][2, 1].item()]
assert "torch" not in sys.modules or sys.modules["torch"] is None
with open(sys.argv[1], "wb") as f:
    pickle.dump(out, f)
"""


def plain(x):
    """torch's object in the reader's terms (tensors as NumPy arrays)."""
    if isinstance(x, torch.Tensor):
        return ("Parameter" if isinstance(x, torch.nn.Parameter) else "Tensor", x.detach().numpy(), x.requires_grad)
    if isinstance(x, dict):
        return (type(x).__name__, [(k, plain(v)) for k, v in x.items()])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [plain(v) for v in x])
    return x


def assert_same(ours, theirs, where="root"):
    assert type(ours) is type(theirs), where
    if isinstance(theirs, tuple) and len(theirs) == 3 and theirs[0] in ("Tensor", "Parameter"):
        assert ours[0] == theirs[0] and ours[2] == theirs[2], where
        assert ours[1].dtype == theirs[1].dtype and ours[1].shape == theirs[1].shape, where
        np.testing.assert_array_equal(ours[1], theirs[1], err_msg=where)
    elif isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert ours == theirs, where


def torch_files(folder):
    torch.manual_seed(0)
    model = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        model(torch.randn(2, 3, 8)).square().mean().backward()
        opt.step()
        sched.step()
    base = torch.arange(24.0).reshape(4, 6)
    objects = {
        "model.pt": model.state_dict(),
        "optimizer.pt": opt.state_dict(),
        "scheduler.pt": sched.state_dict(),
        "sgd.pt": torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9).state_dict(),
        "mixed.pt": {"epoch": 3, "loss": 0.25, "name": "run-1", "none": None, "flags": (True, False),
                     "big": 2**70, "set": {1, 2}, "bytes": b"\x00\xff", "nested": [{"a": [1.5]}],
                     "param": torch.nn.Parameter(torch.ones(2)), "grad": torch.ones(2, requires_grad=True)},
        "dtypes.pt": {name: (torch.arange(6) * 37 - 90).to(getattr(torch, name)).reshape(2, 3) for name in DTYPES},
        "shared.pt": {"base": base, "window": base[1:3, 2:5], "t": base.t(), "every_other": base[:, ::2]},
        "whole.pt": {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 3},
    }
    for name, obj in objects.items():
        torch.save(obj, folder / name)
    buffer_file = folder / "buffer.pt"
    with open(buffer_file, "wb") as f:  # saved through a file object: another archive name inside
        torch.save({"w": torch.ones(3)}, f)
    objects["buffer.pt"] = {"w": torch.ones(3)}
    return objects


def test_tinyattn_reads_torchs_files_where_torch_cannot_be_imported(tmp_path):
    objects = torch_files(tmp_path)
    script = tmp_path / "reader.py"
    script.write_text(READER)
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(ta.__file__)))}
    done = subprocess.run([sys.executable, str(script), "out.pkl", *objects], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "out.pkl", "rb") as f:
        ours = pickle.load(f)
    for name, obj in objects.items():
        assert_same(ours[name], plain(obj), name)
    assert ours["shared writes seen"] == [-7.0, -7.0]  # one storage: a write through base shows in the views


def test_torchs_model_state_dict_drives_a_tinyattn_model(tmp_path, rng):
    theirs = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    torch.save(theirs.state_dict(), tmp_path / "model.pt")
    ours = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    ours.load_state_dict(ta.load(tmp_path / "model.pt"))
    x = rng.standard_normal((2, 5, 8)).astype(np.float32)
    np.testing.assert_allclose(ours(ta.tensor(x)).detach().numpy(), theirs(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


class RunsACommand:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_malicious_file_written_by_torch_save_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    torch.save({"weight": torch.ones(2), "payload": RunsACommand(marker)}, tmp_path / "evil.pt")
    with pytest.raises(UnsafeCheckpointError, match=r"the global (posix|os)\.system"):
        ta.load(tmp_path / "evil.pt")
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError):  # and torch's own weights-only loading agrees
        torch.load(tmp_path / "evil.pt", weights_only=True)
    assert not marker.exists()


def test_a_cuda_checkpoint_needs_map_location(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "gpu.pt")
    # rewrite the location as a GPU-trained file would carry it ("cuda:0")
    import zipfile

    with zipfile.ZipFile(tmp_path / "gpu.pt") as z:
        records = {info.filename: z.read(info) for info in z.infolist()}
    pkl = next(k for k in records if k.endswith("/data.pkl"))
    records[pkl] = records[pkl].replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
    with zipfile.ZipFile(tmp_path / "gpu.pt", "w") as z:
        for k, v in records.items():
            z.writestr(k, v)
    with pytest.raises(RuntimeError, match="saved on 'cuda:0'.*map_location='cpu'"):
        ta.load(tmp_path / "gpu.pt")
    np.testing.assert_array_equal(ta.load(tmp_path / "gpu.pt", map_location="cpu")["w"].numpy(), [1.0, 1.0])
