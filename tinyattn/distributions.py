"""``torch.distributions``: Normal, Uniform, Bernoulli and Categorical, and ``kl_divergence`` between two of a kind.

Each distribution's parameters are tensors (broadcast together: its ``batch_shape``), and every formula is
written in tinyattn's ops, so gradients flow as torch's do:

* ``log_prob(x)`` and ``entropy()`` are differentiable in the parameters (a policy gradient, a likelihood);
* ``rsample()`` draws by reparameterization, ``loc + scale * eps`` (Normal) or ``low + (high - low) * u``
  (Uniform) with ``eps``, ``u`` drawn apart from the parameters, so a gradient flows through the sample into
  them (a VAE's latent);
* ``sample()`` draws the same way without a graph; Bernoulli and Categorical, being discrete, have no
  ``rsample``.

Parameters are checked as torch checks them (``validate_args``, on by default): a negative scale, a
probability outside [0, 1] is a ``ValueError`` naming the parameter.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .autograd import Tensor, no_grad
from .autograd.creation import _rng, tensor

__all__ = ["Bernoulli", "Categorical", "Distribution", "Normal", "Uniform", "kl_divergence"]


def _as_tensor(value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value
    array = np.asarray(value)
    return tensor(array, dtype=None if array.dtype.kind == "f" else np.float32)


def broadcast_tensors(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """``a`` and ``b`` expanded to their common shape (a distribution's ``batch_shape``)."""
    shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    return (a if tuple(a.shape) == shape else a.expand(*shape)), (b if tuple(b.shape) == shape else b.expand(*shape))


def _shape(sample_shape: Any) -> tuple[int, ...]:
    return tuple(sample_shape) if isinstance(sample_shape, (tuple, list)) else (int(sample_shape),)


class Distribution:
    """The shared part: shapes, ``sample`` as ``rsample`` without a graph, ``stddev``, and the parameter check."""

    has_rsample = False
    batch_shape: tuple[int, ...] = ()
    event_shape: tuple[int, ...] = ()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape``, with no graph."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """A draw through which gradients flow into the parameters (reparameterization)."""
        raise NotImplementedError(f"{type(self).__name__} has no rsample: its samples are discrete, so no gradient "
                                  "flows through them (use log_prob for a score-function gradient)")

    def log_prob(self, value: Any) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, one per batch element."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The standard deviation."""
        return self.variance.sqrt()

    @property
    def variance(self) -> Tensor:
        """The variance."""
        raise NotImplementedError

    def _check(self, name: str, value: Tensor, ok: np.ndarray, constraint: str, validate: Any) -> None:
        if validate is not False and not np.all(ok):
            raise ValueError(f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) of distribution "
                             f"{type(self).__name__} to satisfy the constraint {constraint}, but found invalid "
                             f"values:\n{value}")

    def __repr__(self) -> str:
        params = ", ".join(f"{n}: {tuple(getattr(self, n).shape)}" for n in self._params)
        return f"{type(self).__name__}({params})"

    _params: tuple[str, ...] = ()


class Normal(Distribution):
    """The normal distribution ``N(loc, scale²)``.

    ``log_prob(x) = -(x - loc)² / (2 scale²) - log scale - log √(2π)``."""

    has_rsample = True
    _params = ("loc", "scale")

    def __init__(self, loc: Any, scale: Any, validate_args: Any = None) -> None:
        self.loc, self.scale = broadcast_tensors(_as_tensor(loc), _as_tensor(scale))
        self._check("scale", self.scale, self.scale.array > 0, "GreaterThan(lower_bound=0.0)", validate_args)
        self.batch_shape = tuple(self.loc.shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """``loc + scale * eps``, ``eps ~ N(0, 1)``: a gradient flows into ``loc`` and ``scale``."""
        shape = _shape(sample_shape) + self.batch_shape
        eps = Tensor._make(_rng("normal", None).standard_normal(shape).astype(self.loc.dtype))
        return self.loc + self.scale * eps

    def log_prob(self, value: Any) -> Tensor:
        """``-(x - loc)² / (2 scale²) - log scale - log √(2π)``."""
        x = _as_tensor(value)
        return -((x - self.loc) ** 2) / (2 * self.scale ** 2) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def entropy(self) -> Tensor:
        """``1/2 + log √(2π) + log scale``."""
        return 0.5 + math.log(math.sqrt(2 * math.pi)) + self.scale.log()

    @property
    def mean(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def stddev(self) -> Tensor:
        """``scale``."""
        return self.scale

    @property
    def variance(self) -> Tensor:
        """``scale²``."""
        return self.scale ** 2


class Uniform(Distribution):
    """The uniform distribution on ``[low, high)``: density ``1 / (high - low)`` inside, 0 outside."""

    has_rsample = True
    _params = ("low", "high")

    def __init__(self, low: Any, high: Any, validate_args: Any = None) -> None:
        self.low, self.high = broadcast_tensors(_as_tensor(low), _as_tensor(high))
        self._check("low", self.low, self.low.array < self.high.array, "LessThan(upper_bound=high)", validate_args)
        self.batch_shape = tuple(self.low.shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """``low + (high - low) * u``, ``u ~ U[0, 1)``."""
        shape = _shape(sample_shape) + self.batch_shape
        u = Tensor._make(_rng("uniform", None).random(shape).astype(self.low.dtype))
        return self.low + (self.high - self.low) * u

    def log_prob(self, value: Any) -> Tensor:
        """``-log(high - low)`` inside ``[low, high)``, ``-inf`` outside."""
        x = _as_tensor(value)
        inside = (x.array >= self.low.array) & (x.array < self.high.array)
        return -(self.high - self.low).log() + Tensor._make(np.where(inside, 0.0, -np.inf).astype(x.dtype))

    def entropy(self) -> Tensor:
        """``log(high - low)``."""
        return (self.high - self.low).log()

    @property
    def mean(self) -> Tensor:
        """``(low + high) / 2``."""
        return (self.low + self.high) / 2

    @property
    def variance(self) -> Tensor:
        """``(high - low)² / 12``."""
        return (self.high - self.low) ** 2 / 12


def _logits_and_probs(name: str, probs: Any, logits: Any) -> tuple[str, Tensor]:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("probs", _as_tensor(probs)) if probs is not None else ("logits", _as_tensor(logits))


class Bernoulli(Distribution):
    """A coin that comes up 1 with probability ``probs = sigmoid(logits)``.

    ``log_prob(x) = x log p + (1 - x) log(1 - p)``."""

    _params = ("probs",)

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Any = None) -> None:
        given, value = _logits_and_probs("Bernoulli", probs, logits)
        if given == "probs":
            self._check("probs", value, (value.array >= 0) & (value.array <= 1), "Interval(lower_bound=0.0, "
                        "upper_bound=1.0)", validate_args)
            self.probs = value
            clamped = value.clamp(1e-12 if value.dtype == np.float64 else 1e-7, None)
            self.logits = clamped.log() - (1 - value).clamp(float(np.finfo(value.dtype).tiny), None).log()
        else:
            self.logits = value
            self.probs = value.sigmoid()
        self.batch_shape = tuple(value.shape)
        self._params = (given,)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """0s and 1s (in the parameters' dtype), 1 with probability ``probs``."""
        shape = _shape(sample_shape) + self.batch_shape
        draws = _rng("bernoulli", None).random(shape) < np.broadcast_to(self.probs.array, shape)
        return Tensor._make(draws.astype(self.probs.dtype))

    def log_prob(self, value: Any) -> Tensor:
        """``x log p + (1 - x) log(1 - p)``, from the logits (``-softplus(-l)`` and ``-softplus(l)``, stable)."""
        x = _as_tensor(value)
        return -(x * _softplus(-self.logits) + (1 - x) * _softplus(self.logits))

    def entropy(self) -> Tensor:
        """``-(p log p + (1 - p) log(1 - p))``."""
        p = self.probs
        return p * _softplus(-self.logits) + (1 - p) * _softplus(self.logits)

    @property
    def mean(self) -> Tensor:
        """``probs``."""
        return self.probs

    @property
    def variance(self) -> Tensor:
        """``p (1 - p)``."""
        return self.probs * (1 - self.probs)


def _softplus(x: Tensor) -> Tensor:
    """``log(1 + exp(x))`` without overflow: ``max(x, 0) + log(1 + exp(-|x|))``."""
    return x.relu() + (-x.abs()).exp().log1p()


class Categorical(Distribution):
    """One of ``K`` categories (the last dim of ``probs`` or ``logits``), ``k`` with probability ``probs[..., k]``."""

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Any = None) -> None:
        given, value = _logits_and_probs("Categorical", probs, logits)
        if value.ndim < 1:
            raise ValueError(f"`{given}` parameter must be at least one-dimensional.")
        if given == "probs":
            self._check("probs", value, value.array >= 0, "Simplex()", validate_args)
            self.probs = value / value.sum(-1, keepdim=True)
            self.logits = self.probs.clamp(float(np.finfo(value.dtype).tiny), None).log()
        else:
            self.logits = value - value.logsumexp(-1, keepdim=True)
            self.probs = self.logits.exp()
        self.batch_shape = tuple(value.shape[:-1])
        self._params = ("probs", "logits")

    @property
    def param_shape(self) -> tuple[int, ...]:
        """``batch_shape + (K,)``."""
        return tuple(self.probs.shape)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Category indices (int64) of shape ``sample_shape + batch_shape``."""
        shape = _shape(sample_shape) + self.batch_shape
        p = np.broadcast_to(self.probs.array, shape + self.probs.shape[-1:])
        cumulative = np.cumsum(p, axis=-1)
        u = _rng("categorical", None).random(shape + (1,)) * cumulative[..., -1:]
        return Tensor._make(np.minimum((cumulative <= u).sum(-1), p.shape[-1] - 1).astype(np.int64))

    def log_prob(self, value: Any) -> Tensor:
        """``log probs[..., value]``."""
        index = _as_tensor(value).array.astype(np.int64)
        logits = self.logits.expand(*(np.broadcast_shapes(index.shape, self.batch_shape) + self.logits.shape[-1:]))
        return logits.gather(-1, Tensor._make(np.broadcast_to(index, logits.shape[:-1])[..., None])).squeeze(-1)

    def entropy(self) -> Tensor:
        """``-Σ_k p_k log p_k``."""
        return -(self.probs * self.logits).sum(-1)

    @property
    def mean(self) -> Tensor:
        """Undefined for categories: NaN, as torch."""
        return Tensor._make(np.full(self.batch_shape, np.nan, self.probs.dtype))

    @property
    def variance(self) -> Tensor:
        """Undefined for categories: NaN, as torch."""
        return self.mean


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """``KL(p ‖ q) = E_p[log p(x) - log q(x)]``, in closed form, for two distributions of one kind."""
    if isinstance(p, Normal) and isinstance(q, Normal):
        ratio = (p.scale / q.scale) ** 2
        return 0.5 * (ratio + ((p.loc - q.loc) / q.scale) ** 2 - 1 - ratio.log())
    if isinstance(p, Uniform) and isinstance(q, Uniform):
        inside = (q.low.array <= p.low.array) & (p.high.array <= q.high.array)
        outside = Tensor._make(np.where(inside, 0.0, np.inf).astype(p.low.dtype))
        return ((q.high - q.low) / (p.high - p.low)).log() + outside
    if isinstance(p, Bernoulli) and isinstance(q, Bernoulli):
        return (p.probs * (_softplus(-q.logits) - _softplus(-p.logits))
                + (1 - p.probs) * (_softplus(q.logits) - _softplus(p.logits)))
    if isinstance(p, Categorical) and isinstance(q, Categorical):
        return (p.probs * (p.logits - q.logits)).sum(-1)
    raise NotImplementedError(f"kl_divergence: no closed form here for {type(p).__name__} and {type(q).__name__} "
                              "(Normal, Uniform, Bernoulli and Categorical, each with its own kind)")
