"""``tinyattn.utils.data``: datasets, samplers and the loader that batches them, at torch's module paths.

``dataset`` (``Dataset``, ``IterableDataset``, ``TensorDataset``, ``Subset``, ``ConcatDataset``,
``random_split``), ``sampler`` (``SequentialSampler``, ``RandomSampler``, ``BatchSampler``, ...)
and ``dataloader`` (``DataLoader``, ``default_collate``, ``get_worker_info``), each importable by
the path torch code uses (``from torch.utils.data.dataset import Dataset``).
"""

from . import dataloader, dataset, sampler
from .dataloader import DataLoader, default_collate, get_worker_info
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset", "RandomSampler", "Sampler",
    "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "dataloader",
    "dataset", "default_collate", "get_worker_info", "random_split", "sampler",
]
