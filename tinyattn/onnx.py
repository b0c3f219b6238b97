"""``torch.onnx``: exporting a model to ONNX needs torch's traced graph, which tinyattn does not have."""

from __future__ import annotations

from typing import Any, NoReturn


def export(model: Any, args: Any = (), f: Any = None, *rest: Any, **kwargs: Any) -> NoReturn:
    """Refused, with what to do instead."""
    raise RuntimeError("torch.onnx.export: tinyattn cannot export ONNX (it has no traced graph); save the weights "
                       "with torch.save(model.state_dict(), path), load them into the same model in PyTorch "
                       "(torch.load reads tinyattn's checkpoints), and export from there")


def is_in_onnx_export() -> bool:
    """False: nothing is being exported."""
    return False


__all__ = ["export", "is_in_onnx_export"]
