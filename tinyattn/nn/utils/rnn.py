"""``torch.nn.utils.rnn``: sequences of different lengths as one padded batch.

``pad_sequence`` is a composition of core ops (each sequence ``cat``-ed with its padding, the
results ``stack``-ed), so its gradient is theirs: each sequence gets back exactly the slice of
the batch's gradient that its own positions received, the padding none.
"""

from __future__ import annotations

from typing import Sequence

from ...autograd import Tensor, cat, full, stack


def pad_sequence(sequences: Tensor | Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """``(L_i, *)`` sequences -> ``(max L, B, *)``, or ``(B, max L, *)`` with ``batch_first``, padded on one side."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if not all(isinstance(s, Tensor) for s in sequences):
        raise TypeError("pad_sequence: expected a list of Tensors, got "
                        f"{', '.join(sorted({type(s).__name__ for s in sequences}))}")
    trailing = {tuple(s.shape[1:]) for s in sequences}
    if any(s.ndim == 0 for s in sequences) or len(trailing) > 1:
        raise RuntimeError(f"pad_sequence: the sequences must share all but their first dim, got shapes "
                           f"{[tuple(s.shape) for s in sequences]}")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        pad = full((longest - s.shape[0], *s.shape[1:]), padding_value, dtype=s.dtype)
        padded.append(cat([s, pad] if padding_side == "right" else [pad, s], dim=0))
    return stack(padded, dim=0 if batch_first else 1)


__all__ = ["pad_sequence"]
