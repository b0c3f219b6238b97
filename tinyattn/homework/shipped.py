"""Files that live outside the package in a checkout and inside it once built (see setup.py)."""

from __future__ import annotations

import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.dirname(_HERE)
_CHECKOUT = os.path.dirname(_PACKAGE)

# name -> (where a built package has it, where a checkout has it)
_PLACES = {
    "LICENSE": (os.path.join(_PACKAGE, "LICENSE"), os.path.join(_CHECKOUT, "LICENSE")),
    "teaching.md": (os.path.join(_HERE, "teaching.md"), os.path.join(_CHECKOUT, "docs", "teaching.md")),
}


def shipped_text(name: str) -> str:
    """The text of ``LICENSE`` or ``teaching.md``, from the installed package or the checkout."""
    for path in _PLACES[name]:
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    packaged, checkout = _PLACES[name]
    raise FileNotFoundError(f"{name} is neither in the package ({packaged}) nor in a checkout ({checkout})")
