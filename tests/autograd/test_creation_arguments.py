"""Every factory passes on each argument it takes, and names itself in its errors, as torch's do.

``zeros_like(x, requires_grad=True)`` must give a tensor that requires grad, ``device="cuda"``
must be refused by every factory that takes a device, a negative size or a wrong generator is
reported by the function the user called, and ``as_tensor`` shares what torch's shares.
"""

import numpy as np
import pytest

import tinyattn as ta

LIKE = {"zeros_like": (), "ones_like": (), "empty_like": (), "full_like": (2.5,), "rand_like": (), "randn_like": (),
        "randint_like": (5,)}


@pytest.mark.parametrize("name", sorted(LIKE))
def test_a_like_factory_passes_on_requires_grad_device_and_the_input_s_dtype(name):
    x = ta.ones(2, 3, dtype=ta.float64)
    made = getattr(ta, name)(x, *LIKE[name], requires_grad=True)
    assert made.requires_grad and made.shape == (2, 3) and made.dtype == ta.float64
    assert not getattr(ta, name)(x, *LIKE[name]).requires_grad
    with pytest.raises(RuntimeError, match="device 'cuda' is not available"):
        getattr(ta, name)(x, *LIKE[name], device="cuda")


@pytest.mark.parametrize("make", [
    lambda **kw: ta.empty(2, 3, **kw), lambda **kw: ta.full(3, 1.5, **kw), lambda **kw: ta.eye(3, **kw),
    lambda **kw: ta.arange(0.0, 2.0, 0.5, **kw), lambda **kw: ta.linspace(0, 1, 5, **kw),
    lambda **kw: ta.randperm(4, dtype=ta.float32, **kw),
], ids=["empty", "full", "eye", "arange", "linspace", "randperm"])
def test_a_factory_passes_on_requires_grad(make):
    assert make(requires_grad=True).requires_grad and make(requires_grad=True).is_leaf
    assert not make().requires_grad


@pytest.mark.parametrize(("name", "call"), [
    ("eye", lambda: ta.eye(-1)), ("linspace", lambda: ta.linspace(0, 1, -1)), ("randperm", lambda: ta.randperm(-1)),
    ("randint", lambda: ta.randint(0, 3, (-1,))), ("randint", lambda: ta.randint(0, 3, -1)),
    ("normal", lambda: ta.normal(0.0, 1.0, size=(-1,))),
])
def test_a_negative_size_is_reported_by_the_function_called(name, call):
    with pytest.raises(ValueError, match=rf"^{name}: negative size"):
        call()


@pytest.mark.parametrize(("name", "call"), [
    ("rand", lambda g: ta.rand(2, generator=g)), ("randn", lambda g: ta.randn(2, generator=g)),
    ("randint", lambda g: ta.randint(0, 3, (2,), generator=g)), ("randperm", lambda g: ta.randperm(3, generator=g)),
    ("normal", lambda g: ta.normal(0.0, 1.0, size=(2,), generator=g)),
    ("multinomial", lambda g: ta.multinomial(ta.tensor([0.5, 0.5]), 1, generator=g)),
])
def test_a_generator_that_is_not_one_is_reported_by_the_function_called(name, call):
    with pytest.raises(TypeError, match=rf"^{name}: generator must be a tinyattn Generator, got str"):
        call("seed 0")


def test_multinomial_refuses_a_row_of_zeros_even_when_other_rows_have_weight():
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        ta.multinomial(ta.tensor([[0.0, 0.0], [1.0, 1.0]]), 1)


def test_as_tensor_returns_a_tensor_itself_and_shares_an_array_of_its_dtype():
    t = ta.ones(2)
    assert ta.as_tensor(t) is t  # as torch: no copy, the same object
    a = np.ones(2)
    shared = ta.as_tensor(a, dtype=ta.float64)
    a[0] = 5.0
    assert shared.tolist() == [5.0, 1.0]


def test_full_takes_a_zero_d_tensor_as_its_fill_value():
    filled = ta.full((2,), ta.tensor(1.5))
    assert filled.dtype == ta.float32 and filled.tolist() == [1.5, 1.5]


def test_randint_like_with_one_bound_draws_from_zero_and_randn_like_keeps_the_dtype():
    ta.manual_seed(0)
    draws = ta.randint_like(ta.zeros(2000), 3)
    assert set(np.unique(draws.numpy()).tolist()) == {0.0, 1.0, 2.0}
    assert ta.randn_like(ta.zeros(2, dtype=ta.float64)).dtype == ta.float64
