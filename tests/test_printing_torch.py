"""``torch.Size`` and ``torch.set_printoptions`` against torch: how shapes print, what the options change."""

from __future__ import annotations

import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


@pytest.fixture(autouse=True)
def _default_options_after():
    yield
    for lib in (ta, torch):
        lib.set_printoptions(profile="default", sci_mode=None)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (4, 1, 5)])
def test_size_prints_compares_and_slices_as_torch_s(shape):
    ours, theirs = ta.zeros(*shape).size() if shape else ta.tensor(1.0).size(), torch.zeros(shape).size()
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    assert ours == theirs == shape and ours.numel() == theirs.numel()
    assert repr(ours[1:]) == repr(theirs[1:]) and repr(ta.Size(shape) + (7,)) == repr(torch.Size(shape) + (7,))
    assert repr(ta.Size(list(shape))) == repr(torch.Size(list(shape)))


def test_size_refuses_what_torch_refuses():
    for lib in (ta, torch):
        with pytest.raises(TypeError, match=r"torch.Size\(\) takes an iterable of 'int' \(item 1 is 'float'\)"):
            lib.Size([2, 3.5])


def test_print_options_change_the_digits_the_summary_and_the_notation_as_torch_s_do():
    seen = {}
    for lib in (ta, torch):
        lib.set_printoptions(precision=2)
        short = repr(lib.tensor([1.23456, 2.5]))
        lib.set_printoptions(threshold=5)
        summarised = repr(lib.arange(20.0))
        lib.set_printoptions(profile="full")
        whole = repr(lib.arange(2000.0))
        lib.set_printoptions(profile="default", sci_mode=True)
        scientific = repr(lib.tensor([1234.5]))
        lib.set_printoptions(profile="default", sci_mode=None)
        back = repr(lib.tensor([1.23456]))
        seen[lib.__name__] = ("1.23" in short and "1.2346" not in short, "..." in summarised, "..." in whole,
                              "e+03" in scientific, "1.2346" in back)
    assert seen["tinyattn"] == seen["torch"] == (True, True, False, True, True)
