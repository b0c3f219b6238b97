"""Creation functions against torch's, over random arguments: shape, dtype, requires_grad and (arange) values."""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

DTYPES = [(None, None), (ta.float64, torch.float64), (ta.float32, torch.float32)]


@pytest.mark.parametrize("seed", range(30))
def test_creation_matches_torch(seed):
    rng = np.random.default_rng(seed)
    name = ["zeros", "ones", "randn", "rand"][seed % 4]
    shape = tuple(int(n) for n in rng.integers(0, 4, size=int(rng.integers(0, 4))))
    args = (shape,) if rng.integers(2) else shape  # zeros((2, 3)) and zeros(2, 3)
    ours_dtype, their_dtype = DTYPES[rng.integers(3)]
    kwargs, their_kwargs = {}, {}
    if ours_dtype is not None or rng.integers(2):
        kwargs["dtype"], their_kwargs["dtype"] = ours_dtype, their_dtype
    if rng.integers(2):
        kwargs["requires_grad"] = their_kwargs["requires_grad"] = bool(rng.integers(2))
    if not args:  # torch wants a size, () for a 0-d tensor
        with pytest.raises(TypeError, match=f"{name}: the size is missing"):
            getattr(ta, name)(**kwargs)
        args = ((),)
    ours, theirs = getattr(ta, name)(*args, **kwargs), getattr(torch, name)(*args, **their_kwargs)
    assert ours.shape == tuple(theirs.shape)
    assert str(theirs.dtype) == f"torch.{ours.dtype}"
    assert ours.requires_grad == theirs.requires_grad and ours.is_leaf
    if name in ("zeros", "ones"):
        np.testing.assert_array_equal(ours.array, theirs.detach().numpy())
    elif name == "rand" and ours.array.size:
        assert 0.0 <= ours.array.min() and ours.array.max() < 1.0


@pytest.mark.parametrize("seed", range(30))
def test_arange_matches_torch(seed):
    rng = np.random.default_rng(seed)
    as_float = rng.integers(2)
    start, end = sorted(int(v) for v in rng.integers(-5, 9, size=2))
    step = int(rng.integers(1, 4))
    values = [start + 0.5 * as_float, end, step] if rng.integers(2) else [start, end, step]
    args = [values[0]] if rng.integers(3) == 0 else values[: int(rng.integers(2, 4))]  # arange(end), (s, e), (s, e, st)
    dtype = [(None, None), (ta.float64, torch.float64), (np.int64, torch.int64)][rng.integers(3)]
    kwargs = {} if dtype[0] is None else {"dtype": dtype[0]}
    their_kwargs = {} if dtype[1] is None else {"dtype": dtype[1]}
    try:
        theirs = torch.arange(*args, **their_kwargs)
    except RuntimeError:  # an end the step cannot reach: refused by both
        with pytest.raises(ValueError, match="arange: end .* cannot be reached from start"):
            ta.arange(*args, **kwargs)
        return
    ours = ta.arange(*args, **kwargs)
    assert str(theirs.dtype) == f"torch.{ours.dtype}", args
    np.testing.assert_array_equal(ours.array, theirs.numpy(), err_msg=str(args))


def test_sizes_and_steps_torch_refuses_are_refused():
    with pytest.raises(TypeError, match=r"zeros: size must be ints, got \(2.5,\)"):
        ta.zeros(2.5)  # int(2.5) would silently give 2
    with pytest.raises(ValueError, match=r"randn: negative size in \(2, -1\)"):
        ta.randn(2, -1)
    with pytest.raises(ValueError, match="arange: step must be nonzero"):
        ta.arange(0, 3, 0)
    assert ta.arange(5, 2, -1).tolist() == torch.arange(5, 2, -1).tolist()


@pytest.mark.parametrize("name", ["zeros", "ones", "randn", "rand"])
def test_each_creation_function_names_itself(name):
    with pytest.raises(TypeError, match=f"^{name}: the size is missing"):
        getattr(ta, name)()
    with pytest.raises(TypeError, match=rf"^{name}: size must be ints, got \(2, 'a'\)"):
        getattr(ta, name)(2, "a")
    with pytest.raises(ValueError, match=rf"^{name}: negative size in \(-1,\)"):
        getattr(ta, name)(-1)
