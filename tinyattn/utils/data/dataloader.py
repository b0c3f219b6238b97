"""``torch.utils.data.dataloader``: ``DataLoader``, ``default_collate`` and ``get_worker_info``.

A loader over a map-style dataset asks a sampler for indices (``shuffle=True``: a
``RandomSampler``; else a ``SequentialSampler``; or the ``sampler=`` / ``batch_sampler=`` given)
and collates each batch's items; over an ``IterableDataset`` it collates the items in the order
the dataset yields them. Everything runs in this process: ``num_workers`` is accepted and the
batches are the ones ``num_workers=0`` gives (``get_worker_info()`` is then None, as in torch's
main process), so a seeded run repeats.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from ...autograd import Tensor, stack, tensor
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler


def get_worker_info() -> None:
    """None: the loader's items are made in this (the main) process, as torch's with ``num_workers=0``."""
    return None


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
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                                       or batch_size <= 0):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.num_workers, self.generator = num_workers, generator
        self.collate_fn = collate_fn or default_collate
        if isinstance(dataset, IterableDataset):
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                     f"but got {name}={value}")
            self.sampler, self.batch_sampler = None, None
            return
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            self.batch_size = None
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_sampler is None and self.batch_size is not None:
            batch_sampler = BatchSampler(sampler, self.batch_size, drop_last)
        self.sampler, self.batch_sampler = sampler, batch_sampler

    def __iter__(self) -> Iterator[Any]:
        if self.sampler is None:  # an IterableDataset: its items in its order
            yield from self._stream()
        elif self.batch_sampler is None:  # batch_size=None: each item as it is (collate_fn converts it, if given)
            for index in self.sampler:
                item = self.dataset[index]
                yield item if self.collate_fn is default_collate else self.collate_fn(item)
        else:
            for indices in self.batch_sampler:
                yield self.collate_fn([self.dataset[i] for i in indices])

    def _stream(self) -> Iterator[Any]:
        if self.batch_size is None:
            yield from self.dataset
            return
        batch: list[Any] = []
        for item in self.dataset:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self.sampler is None:  # as torch: the stream's length, if it has one, in batches
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)
