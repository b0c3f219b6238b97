"""``torch.utils.data.dataset``: map-style datasets (``__getitem__``, ``__len__``) and iterable ones (``__iter__``).

``TensorDataset(x, y)`` pairs tensors row by row; ``Subset`` and ``random_split`` pick items;
``ConcatDataset`` chains datasets. An ``IterableDataset`` is a stream: the loader takes its items
in the order it yields them (no shuffle, no sampler, as torch's).
"""

from __future__ import annotations

import bisect
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ...autograd import Tensor
from ...autograd.creation import _rng


class Dataset:
    """Base class of map-style datasets: subclasses define ``__getitem__(i)`` and ``__len__()``.

    (As torch's, the base defines no ``__len__``: ``len()`` of a dataset without one is a TypeError.)"""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no __getitem__")


class IterableDataset(Dataset):
    """Base class of iterable datasets: subclasses define ``__iter__()``, which yields the items in order."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} has no __iter__")

    def __getitem__(self, index: int) -> Any:
        raise TypeError(f"{type(self).__name__} is an IterableDataset: iterate over it, it has no items by index")


class TensorDataset(Dataset):
    """Rows of tensors that share their first dim: item ``i`` is ``tuple(t[i] for t in tensors)``."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor")
        sizes = {t.shape[0] if t.ndim else None for t in tensors}
        if len(sizes) != 1 or None in sizes:
            raise ValueError(f"TensorDataset: size mismatch between tensors, shapes {[t.shape for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The items of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Any, lengths: Sequence[Any], generator: Any = None) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random subsets of the given lengths (or fractions summing to 1)."""
    n = len(dataset)
    if all(isinstance(x, float) for x in lengths) and abs(sum(lengths) - 1) < 1e-9 and sum(lengths) != n:
        counts = [int(np.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):  # the remainder, one each, round-robin (as torch)
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("random_split: sum of input lengths does not equal the length of the input dataset!")
    order = _rng("random_split", generator).permutation(n).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start : start + int(length)]))
        start += int(length)
    return out


class ConcatDataset(Dataset):
    """The items of several datasets, one after another."""

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]).tolist())

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        return self.datasets[which][index - (self.cumulative_sizes[which - 1] if which else 0)]
