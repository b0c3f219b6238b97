"""``tinyattn.utils.data`` against ``torch.utils.data``: the same batches, lengths and collated structures."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.utils import data

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch
tdata = pytest.importorskip("torch.utils.data")

X = np.arange(30.0).reshape(10, 3).astype(np.float32)
Y = np.arange(10) % 3


def batches(lib_data, lib, **kwargs):
    loader = lib_data.DataLoader(lib_data.TensorDataset(lib.tensor(X), lib.tensor(Y)), **kwargs)
    return len(loader), [(xb.numpy().copy(), yb.numpy().copy()) for xb, yb in loader]


@pytest.mark.parametrize("batch_size", [1, 3, 4, 10, 11])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batches_in_order_match_torch(batch_size, drop_last):
    n_ours, ours = batches(data, ta, batch_size=batch_size, drop_last=drop_last)
    n_theirs, theirs = batches(tdata, torch, batch_size=batch_size, drop_last=drop_last)
    assert n_ours == n_theirs == len(ours) == len(theirs)
    for (xa, ya), (xb, yb) in zip(ours, theirs):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)
        assert xa.dtype == xb.dtype and ya.dtype == yb.dtype


class Pairs:
    """A dataset of nested samples: a dict with an array, a number and a tuple."""

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": np.full(2, float(i)), "label": i, "pair": (np.array([i, -i]), float(i) / 2)}


def test_nested_collate_matches_torch():
    ours = next(iter(data.DataLoader(Pairs(), batch_size=3)))
    theirs = next(iter(tdata.DataLoader(Pairs(), batch_size=3)))
    assert ours.keys() == theirs.keys()
    for a, b in [(ours["x"], theirs["x"]), (ours["label"], theirs["label"]),
                 (ours["pair"][0], theirs["pair"][0])]:
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a.numpy().dtype == b.numpy().dtype
    np.testing.assert_allclose(ours["pair"][1].numpy(), theirs["pair"][1].numpy())
    assert isinstance(ours["pair"], tuple)


def test_shuffle_is_a_permutation_and_repeats_under_manual_seed():
    def epoch():
        return np.concatenate([yb.numpy() for _, yb in data.DataLoader(data.TensorDataset(ta.tensor(X), ta.tensor(
            np.arange(10))), batch_size=4, shuffle=True)])

    ta.manual_seed(3)
    first = epoch()
    ta.manual_seed(3)
    assert np.array_equal(epoch(), first) and sorted(first.tolist()) == list(range(10))
    g = ta.Generator().manual_seed(1)
    loader = data.DataLoader(data.TensorDataset(ta.tensor(np.arange(10))), batch_size=5, shuffle=True, generator=g)
    assert sorted(np.concatenate([b[0].numpy() for b in loader]).tolist()) == list(range(10))


def test_random_split_and_subset():
    ta.manual_seed(0)
    parts = data.random_split(range(10), [7, 3])
    assert [len(p) for p in parts] == [7, 3]
    assert sorted(parts[0][i] for i in range(7)) + sorted(parts[1][i] for i in range(3)) != [] and sorted(
        [parts[0][i] for i in range(7)] + [parts[1][i] for i in range(3)]) == list(range(10))
    assert [len(p) for p in data.random_split(range(10), [0.5, 0.3, 0.2])] == [
        len(p) for p in tdata.random_split(range(10), [0.5, 0.3, 0.2])]
    with pytest.raises(ValueError, match="sum of input lengths"):
        data.random_split(range(10), [3, 3])


def test_a_quickstart_style_loop_matches_torch_step_by_step():
    def train(lib, lib_data):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 8), lib.nn.ReLU(), lib.nn.Linear(8, 3))
        rng = np.random.default_rng(0)
        with lib.no_grad():
            for p in model.parameters():
                p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)) * 0.3, dtype=lib.float32))
        loader = lib_data.DataLoader(lib_data.TensorDataset(lib.tensor(X / 30), lib.tensor(Y)), batch_size=4)
        loss_fn = lib.nn.CrossEntropyLoss()
        optimizer = lib.optim.SGD(model.parameters(), lr=0.5)
        losses = []
        for _ in range(3):
            for xb, yb in loader:
                loss = loss_fn(model(xb), yb)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                losses.append(loss.item())
        return losses

    np.testing.assert_allclose(train(ta, data), train(torch, tdata), rtol=1e-5)


def test_bad_loaders_are_refused():
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        data.DataLoader(range(3), batch_size=0)
    with pytest.raises(ValueError, match="size mismatch"):
        data.TensorDataset(ta.ones(3), ta.ones(4))
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        next(iter(data.DataLoader([object()], batch_size=1)))
