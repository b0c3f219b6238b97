"""``torch.utils.data.sampler``: the orders in which a loader visits a map-style dataset's items.

A sampler is an iterable of indices; a batch sampler, of lists of indices. The random ones
draw from the generator ``manual_seed`` controls (or the ``generator=`` given), so a seeded run
repeats; the orders differ from torch's (another random generator), their properties do not.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np

from ...autograd.creation import _rng


class Sampler:
    """Base class: subclasses define ``__iter__`` (the indices) and, where they know it, ``__len__``."""

    def __init__(self, data_source: Any = None) -> None:
        pass

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} has no __iter__")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices, or (``replacement=True``) ``num_samples`` draws with replacement."""

    def __init__(self, data_source: Any, replacement: bool = False, num_samples: int | None = None,
                 generator: Any = None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        self.data_source, self.replacement, self._num_samples, self.generator = (
            data_source, replacement, num_samples, generator)

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields (the dataset's length unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, rng = len(self.data_source), _rng("RandomSampler", self.generator)
        if self.replacement:
            return iter(rng.integers(0, n, self.num_samples).tolist())
        order: list[int] = []
        while len(order) < self.num_samples:  # (more samples than items: whole permutations, as torch)
            order += rng.permutation(n).tolist()
        return iter(order[: self.num_samples])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices``, in a random order."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        order = _rng("SubsetRandomSampler", self.generator).permutation(len(self.indices))
        return iter([self.indices[i] for i in order.tolist()])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probability proportional to ``weights`` (with replacement by default)."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        w = np.asarray(weights.array if hasattr(weights, "array") else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if not replacement and num_samples > w.size:
            raise RuntimeError("WeightedRandomSampler: cannot draw more samples than there are weights "
                               f"without replacement ({num_samples} > {w.size})")
        self.weights, self.num_samples, self.replacement, self.generator = w, num_samples, replacement, generator

    def __iter__(self) -> Iterator[int]:
        rng = _rng("WeightedRandomSampler", self.generator)
        p = self.weights / self.weights.sum()
        return iter(rng.choice(len(p), self.num_samples, replace=self.replacement, p=p).tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (the last one shorter, unless ``drop_last``)."""

    def __init__(self, sampler: Any, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
