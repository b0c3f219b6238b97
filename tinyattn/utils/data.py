"""``tinyattn.utils.data``: datasets and the loader that batches them, with torch's names.

A ``Dataset`` is anything with ``__getitem__`` and ``__len__``; ``TensorDataset(x, y)`` pairs
tensors row by row. ``DataLoader(dataset, batch_size, shuffle, drop_last, collate_fn,
generator)`` yields batches: the default collate stacks tensors, NumPy arrays and numbers along
a new first dim, and recurses into tuples, lists and dicts. Shuffling draws from the generator
``manual_seed`` controls (or the ``generator=`` given), so a seeded run repeats; the order
differs from torch's (another random generator), the batching does not.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..autograd import Tensor, stack, tensor
from ..autograd.creation import _rng


class Dataset:
    """Base class of map-style datasets: subclasses define ``__getitem__(i)`` and ``__len__()``."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} has no __len__")


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


def default_collate(batch: list[Any]) -> Any:
    """Stack a list of samples into one batch, as torch's default collate does.

    Tensors, arrays and numbers are stacked along a new dim 0; tuples, lists and dicts are
    collated element by element; strings are left as a list."""
    first = batch[0]
    if isinstance(first, Tensor):
        return stack(list(batch))
    if isinstance(first, (np.ndarray, np.generic, bool, int, float)):
        return tensor(np.stack([np.asarray(b) for b in batch]))
    if isinstance(first, str):
        return list(batch)
    if isinstance(first, dict):
        return {key: default_collate([b[key] for b in batch]) for key in first}
    if isinstance(first, (tuple, list)):
        if any(len(b) != len(first) for b in batch):
            raise RuntimeError("default_collate: each element in the batch should be of equal size")
        return type(first)(default_collate(list(items)) for items in zip(*batch)) if isinstance(first, tuple) \
            else [default_collate(list(items)) for items in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, NumPy arrays, numbers, dicts or lists; "
                    f"found {type(first).__name__}")


class DataLoader:
    """Batches of a dataset: ``for X, y in DataLoader(data, batch_size=64, shuffle=True): ...``."""

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Any = None,
        batch_sampler: Any = None,
        num_workers: int = 0,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Any = None,
        multiprocessing_context: Any = None,
        generator: Any = None,
    ) -> None:
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size <= 0):
            raise ValueError(f"DataLoader: batch_size should be a positive integer value, got {batch_size!r}")
        if sampler is not None or batch_sampler is not None:
            raise NotImplementedError("DataLoader: sampler and batch_sampler are not implemented; use shuffle")
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, bool(shuffle), drop_last
        self.collate_fn = collate_fn or default_collate
        self.generator = generator

    def _batches(self) -> list[list[int]]:
        n = len(self.dataset)
        order = _rng("DataLoader", self.generator).permutation(n).tolist() if self.shuffle else list(range(n))
        if self.batch_size is None:
            return [[i] for i in order]
        cuts = range(0, n, self.batch_size)
        batches = [order[i : i + self.batch_size] for i in cuts]
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        return batches

    def __iter__(self) -> Iterator[Any]:
        for indices in self._batches():
            samples = [self.dataset[i] for i in indices]
            yield samples[0] if self.batch_size is None else self.collate_fn(samples)

    def __len__(self) -> int:
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
