"""Recurrent layers as torch has them: ``RNN``, ``LSTM``, ``GRU`` and their one-step ``*Cell`` forms.

One time step is a few matrix products and gates, written out below as the textbooks write them
(``torch.nn.LSTM``'s documentation gives the same equations); the layer runs the step along the
sequence, layer after layer, and in both directions when ``bidirectional``. The gradients come from
the ops the steps are made of, so backpropagation through time is the engine's ordinary backward.

Shapes and names follow torch: ``input (L, N, H_in)`` (``(N, L, H_in)`` with ``batch_first``, or
``(L, H_in)`` unbatched), ``h_0 (D * num_layers, N, H_out)``; parameters ``weight_ih_l0``,
``weight_hh_l0``, ``bias_ih_l0``, ``bias_hh_l0`` (``..._reverse`` for the backward direction), the
gates stacked in torch's order (LSTM: i, f, g, o; GRU: r, z, n), all drawn from U(-1/sqrt(H), 1/sqrt(H)).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd import Tensor, cat, stack
from ..autograd.creation import float_dtype
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def rnn_step(x_proj: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None, relu: bool) -> Tensor:
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (``relu`` instead of tanh if asked)."""
    pre = x_proj + F.linear(h, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


def lstm_step(x_proj: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> tuple[Tensor, Tensor]:
    """``i, f, g, o`` from the input and the last ``h``; ``c' = f * c + i * g``, ``h' = o * tanh(c')``."""
    i, f, g, o = (x_proj + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def gru_step(x_proj: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """``r, z`` gate the reset and the update; ``n = tanh(x_n + r * h_n)``, ``h' = (1 - z) * n + z * h``."""
    x_r, x_z, x_n = x_proj.chunk(3, -1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return (1 - z) * n + z * h


def step(mode: str, x_proj: Tensor, state: list[Tensor], w_hh: Tensor, b_hh: Tensor | None) -> list[Tensor]:
    """One time step of ``mode`` (``"LSTM"``, ``"GRU"``, ``"RNN_TANH"``, ``"RNN_RELU"``): the new ``[h]``
    (``[h, c]`` for LSTM) from the step's input term ``x_proj`` and the last state."""
    if mode == "LSTM":
        return list(lstm_step(x_proj, state[0], state[1], w_hh, b_hh))
    if mode == "GRU":
        return [gru_step(x_proj, state[0], w_hh, b_hh)]
    return [rnn_step(x_proj, state[0], w_hh, b_hh, relu=mode == "RNN_RELU")]


def add_step_weights(module: Module, mode: str, input_size: int, hidden_size: int, bias: bool, dtype: Any,
                     suffix: str = "") -> None:
    """``weight_ih{suffix}``, ``weight_hh{suffix}`` (and the two biases) of one step, each drawn from
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) as torch's, the gates stacked along dim 0."""
    gates, bound = GATES[mode] * hidden_size, 1.0 / math.sqrt(hidden_size)
    shapes: dict[str, tuple[int, ...]] = {"weight_ih": (gates, input_size), "weight_hh": (gates, hidden_size)}
    if bias:
        shapes.update(bias_ih=(gates,), bias_hh=(gates,))
    for kind, shape in shapes.items():
        p = Parameter(np.empty(shape, dtype=dtype))
        init.uniform_(p, -bound, bound)
        setattr(module, kind + suffix, p)


class RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: the parameters, the shapes, the loop over layers and time."""

    mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, *, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError(f"hidden_size must be a positive int, got {hidden_size!r}")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError(f"num_layers must be a positive int, got {num_layers!r}")
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError(f"dropout should be a number in range [0, 1] representing the probability of an "
                             f"element being zeroed, got {dropout!r}")
        if proj_size:
            raise NotImplementedError("LSTM(proj_size=...) is not implemented in tinyattn")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        dtype = float_dtype(dtype, device)
        for layer in range(num_layers):
            for suffix in ("", "_reverse")[: 2 if bidirectional else 1]:
                width = input_size if layer == 0 else hidden_size * (2 if bidirectional else 1)
                add_step_weights(self, self.mode, width, hidden_size, bias, dtype, f"_l{layer}{suffix}")

    def _weights(self, layer: int, suffix: str) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
        name = f"l{layer}{suffix}"
        return (getattr(self, f"weight_ih_{name}"), getattr(self, f"weight_hh_{name}"),
                getattr(self, f"bias_ih_{name}", None), getattr(self, f"bias_hh_{name}", None))

    def forward(self, input: Tensor, hx: Any = None) -> tuple[Tensor, Any]:
        """``(output, h_n)`` (``(output, (h_n, c_n))`` for LSTM), shapes as torch's."""
        x, batched = self._sequence_first(input)
        directions = 2 if self.bidirectional else 1
        state_shape = (self.num_layers * directions, x.shape[1], self.hidden_size)
        states = self._initial_states(hx, state_shape, batched, x)
        last: list[list[Tensor]] = [[] for _ in states]
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                x = F.dropout(x, self.dropout, training=True)
            outputs = []
            for direction, suffix in enumerate(("", "_reverse")[:directions]):
                k = layer * directions + direction
                out, final = self._run(x, [s[k] for s in states], self._weights(layer, suffix), reverse=direction)
                outputs.append(out)
                for kept, state in zip(last, final):
                    kept.append(state)
            x = outputs[0] if directions == 1 else cat(outputs, -1)
        output = x.transpose(0, 1) if self.batch_first else x
        finals = [stack(kept, 0) for kept in last]
        if not batched:
            output, finals = output.squeeze(1), [f.squeeze(1) for f in finals]
        return output, (finals[0] if self.mode != "LSTM" else (finals[0], finals[1]))

    def _sequence_first(self, input: Tensor) -> tuple[Tensor, bool]:
        if not isinstance(input, Tensor):
            raise TypeError(f"{type(self).__name__}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D instead "
                             f"(shape {tuple(input.shape)})")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]} (input shape {tuple(input.shape)})")
        if input.ndim == 2:
            return input.unsqueeze(1), False
        return (input.transpose(0, 1) if self.batch_first else input), True

    def _initial_states(self, hx: Any, shape: tuple[int, int, int], batched: bool, x: Tensor) -> list[Tensor]:
        count = 2 if self.mode == "LSTM" else 1
        if hx is None:
            zeros = Tensor._make(np.zeros(shape, dtype=x.dtype))
            return [zeros] * count
        given = list(hx) if self.mode == "LSTM" else [hx]
        if len(given) != count or not all(isinstance(h, Tensor) for h in given):
            raise TypeError(f"{type(self).__name__}: hx must be " +
                            ("a tuple (h_0, c_0) of Tensors" if count == 2 else "a Tensor"))
        states = [h if batched else h.unsqueeze(1) for h in given]
        for name, h in zip(("hx", "cx"), states):
            if tuple(h.shape) != shape:
                expected = shape if batched else (shape[0], shape[2])
                got = tuple(h.shape) if batched else (h.shape[0], h.shape[2])
                raise RuntimeError(f"Expected hidden size {expected}, got {got} ({name})")
        return states

    def _run(self, x: Tensor, state: list[Tensor], weights: tuple, reverse: int) -> tuple[Tensor, list[Tensor]]:
        """One direction of one layer over the whole sequence: ``(outputs (L, N, H), final states)``."""
        w_ih, w_hh, b_ih, b_hh = weights
        projected = F.linear(x, w_ih, b_ih)  # every time step's input term at once, (L, N, gates * H)
        steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
        outputs: list[Tensor] = [x] * x.shape[0]
        for t in steps:
            state = step(self.mode, projected[t], state, w_hh, b_hh)
            outputs[t] = state[0]
        return stack(outputs, 0), state

    def extra_repr(self) -> str:
        """``LSTM(10, 20, num_layers=2, batch_first=True)``, as torch prints it."""
        out = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("num_layers", 1), ("bias", True), ("batch_first", False), ("dropout", 0.0),
                              ("bidirectional", False)):
            if getattr(self, name) != default:
                out += f", {name}={getattr(self, name)}"
        return out


class RNN(RNNBase):
    """An Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_(t-1) W_hh^T + b_hh)`` (``nonlinearity='relu'`` too)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 *, device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)  # (both nonlinearities have one gate's weights)
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory: input, forget and output gates around a cell state ``c`` (see ``lstm_step``)."""

    mode = "LSTM"


class GRU(RNNBase):
    """Gated recurrent unit: reset and update gates (see ``gru_step``)."""

    mode = "GRU"


class RNNCellBase(Module):
    """One time step as a module: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``."""

    mode = "RNN_TANH"
    weight_ih: Parameter
    weight_hh: Parameter
    bias_ih: Parameter | None
    bias_hh: Parameter | None

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        if not bias:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        add_step_weights(self, self.mode, input_size, hidden_size, bias, float_dtype(dtype, device))

    def _inputs(self, input: Tensor, hx: Any) -> tuple[Tensor, list[Tensor], bool]:
        if not isinstance(input, Tensor) or input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{getattr(input, 'ndim', type(input).__name__)}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected "
                               f"{self.input_size}")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        count = 2 if self.mode == "LSTM" else 1
        if hx is None:
            states = [Tensor._make(np.zeros((x.shape[0], self.hidden_size), dtype=x.dtype))] * count
        else:
            states = [h if batched else h.unsqueeze(0) for h in (list(hx) if count == 2 else [hx])]
        return x, states, batched

    def forward(self, input: Tensor, hx: Any = None) -> Any:
        """``h'`` (``(h', c')`` for LSTMCell) from ``input (N, H_in)`` and ``hx (N, H)``."""
        x, states, batched = self._inputs(input, hx)
        out = step(self.mode, F.linear(x, self.weight_ih, self.bias_ih), states, self.weight_hh, self.bias_hh)
        out = out if batched else [o.squeeze(0) for o in out]
        return out[0] if len(out) == 1 else tuple(out)

    def extra_repr(self) -> str:
        """``LSTMCell(10, 20)``."""
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(RNNCellBase):
    """One step of ``RNN``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", *,
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, device=device, dtype=dtype)
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        self.nonlinearity = nonlinearity


class LSTMCell(RNNCellBase):
    """One step of ``LSTM``."""

    mode = "LSTM"


class GRUCell(RNNCellBase):
    """One step of ``GRU``."""

    mode = "GRU"
