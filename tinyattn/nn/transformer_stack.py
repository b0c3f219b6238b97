"""The rest of the Transformer of Vaswani et al. (2017), as torch names it: the decoder layer, the
stacks of layers, and the encoder-decoder ``Transformer``. Each is a composition of
``MultiheadAttention``, ``Linear``, ``LayerNorm`` and ``Dropout``, with torch's parameter names,
so state dicts load from torch's modules unchanged.

A decoder layer has three sub-layers, each in a residual connection (post-norm, the default)::

    x = norm1(x + SelfAttention(x, causal mask))          the target attends to its own past
    x = norm2(x + CrossAttention(x, memory, memory))      ... and to the encoder's output
    x = norm3(x + W_2 act(W_1 x))

With ``norm_first=True`` each sub-layer reads ``norm_i(x)`` and adds its output to ``x``.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from ..autograd import Tensor
from ..autograd.creation import float_dtype
from . import functional as F
from . import init
from .attention import MultiheadAttention
from .layers import Dropout, LayerNorm, Linear
from .module import Module, ModuleList
from .transformer import TransformerEncoderLayer


def _activation(owner: str, activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    if isinstance(activation, str):
        if activation not in ("relu", "gelu"):
            raise ValueError(f"{owner}: activation must be 'relu', 'gelu' or a callable, got {activation!r}")
        return F.relu if activation == "relu" else F.gelu
    return activation


def _causal_hint(owner: str, is_causal: bool | None, mask: Any) -> None:
    """torch's ``is_causal`` is a hint that the mask given is causal: without a mask it is refused."""
    if is_causal and mask is None:
        raise RuntimeError(f"{owner}: the is_causal hint requires the mask itself (as in torch); make it with "
                           "nn.Transformer.generate_square_subsequent_mask(n)")


class TransformerDecoderLayer(Module):
    """Masked self-attention, attention over the encoder's ``memory``, then a feed-forward network."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        float_dtype(dtype, device)  # (refuses any device but the CPU, and a non-float dtype)
        self.activation = _activation("TransformerDecoderLayer", activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1, self.dropout2, self.dropout3 = Dropout(dropout), Dropout(dropout), Dropout(dropout)
        self.batch_first = batch_first

    def _self_attend(self, x: Tensor, mask: Any, padding: Any, is_causal: bool) -> Tensor:
        return self.dropout1(self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding,
                                            need_weights=False, is_causal=is_causal)[0])

    def _cross_attend(self, x: Tensor, memory: Tensor, mask: Any, padding: Any) -> Tensor:
        return self.dropout2(self.multihead_attn(x, memory, memory, attn_mask=mask, key_padding_mask=padding,
                                                 need_weights=False)[0])

    def _feed_forward(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None, memory_mask: Any = None,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """``tgt (T, B, d)`` and ``memory (S, B, d)`` (``(B, ., d)`` with ``batch_first``) in; ``tgt``'s shape out."""
        _causal_hint("TransformerDecoderLayer", tgt_is_causal, tgt_mask)
        _causal_hint("TransformerDecoderLayer", memory_is_causal, memory_mask)
        x = tgt
        if self.norm_first:
            x = x + self._self_attend(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._cross_attend(self.norm2(x), memory, memory_mask, memory_key_padding_mask)
            x = x + self._feed_forward(self.norm3(x))
        else:
            x = self.norm1(x + self._self_attend(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._cross_attend(x, memory, memory_mask, memory_key_padding_mask))
            x = self.norm3(x + self._feed_forward(x))
        return x


def _clones(layer: Module, n: int) -> ModuleList:
    """``n`` independent copies of ``layer`` (torch deep-copies the layer it is given, as here)."""
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` applied in turn, then ``norm`` if given."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        """``enable_nested_tensor`` and ``mask_check`` select torch's fast paths; they change nothing here."""
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src: Tensor, mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool | None = None) -> Tensor:
        """The input's shape in and out."""
        _causal_hint("TransformerEncoder", is_causal, mask)
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` applied in turn (each attending to ``memory``), then ``norm``."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None, memory_mask: Any = None,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """``tgt``'s shape in and out."""
        _causal_hint("TransformerDecoder", tgt_is_causal, tgt_mask)
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """The encoder-decoder Transformer: ``decoder(tgt, encoder(src))``, each stack ending in a LayerNorm.

    Its weight matrices start Xavier-uniform, as torch's.
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = "relu", custom_encoder: Any = None,
                 custom_decoder: Any = None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        layer_options = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                             layer_norm_eps=layer_norm_eps, batch_first=batch_first, norm_first=norm_first,
                             bias=bias, device=device, dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(d_model, nhead, **layer_options), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(d_model, nhead, **layer_options), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Any = None, tgt_mask: Any = None, memory_mask: Any = None,
                src_key_padding_mask: Any = None, tgt_key_padding_mask: Any = None,
                memory_key_padding_mask: Any = None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """``src (S, B, d)`` and ``tgt (T, B, d)`` (``(B, ., d)`` with ``batch_first``) in; ``tgt``'s shape out."""
        batched = src.ndim == 3
        batch_dim = 0 if self.batch_first else 1
        if batched and tgt.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError(f"Transformer: the batch number of src and tgt must be equal, got shapes "
                               f"{tuple(src.shape)} and {tuple(tgt.shape)}")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"Transformer: the feature number of src and tgt must be equal to d_model "
                               f"({self.d_model}), got shapes {tuple(src.shape)} and {tuple(tgt.shape)}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        """The ``(sz, sz)`` causal mask to add to the scores: ``-inf`` above the diagonal, 0 on and below it."""
        dtype = float_dtype(dtype, device)
        return Tensor._make(np.triu(np.full((sz, sz), -np.inf, dtype=dtype), k=1))
