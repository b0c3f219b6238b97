"""``tinyattn.utils.data``: where torch keeps ``Dataset`` and ``DataLoader``.

It holds no loaders yet: a name asked for here raises an ``AttributeError`` that
says so, so ``from tinyattn.utils.data import DataLoader`` fails on its first line.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"tinyattn.utils.data has no {name!r}: datasets and data loaders are not implemented yet; "
                         "iterate over index batches (ta.randperm(n).split(batch_size)) instead")
