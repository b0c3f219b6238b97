"""Why attention divides by √d_k: the argument, and the numbers, computed with tinyattn.

**The argument.** Let a query ``q`` and a key ``k`` have ``d_k`` independent entries of mean 0 and
variance 1. Their dot product ``q·k = Σ_i q_i k_i`` is a sum of ``d_k`` independent terms, each of
mean 0 and variance ``E[q_i²] E[k_i²] = 1``; so ``Var(q·k) = d_k``, and the logits ``Q Kᵀ`` spread as
``√d_k``. Softmax of logits that far apart is nearly one-hot: one weight near 1, the rest near 0. There
its Jacobian ``diag(p) − p pᵀ`` is nearly zero, so the gradient softmax passes back,
``dS = P ⊙ (dP − rowsum(dP ⊙ P))``, nearly vanishes; and every gradient that reaches ``Q`` and ``K``
passes through it (``dQ = dS K``, ``dK = (dS)ᵀ Q``): the attention learns slowly where to look. Dividing the
logits by ``√d_k`` gives them variance 1 again, whatever ``d_k`` is: the softmax stays soft and its
gradient stays the same size.

**The numbers.** ``scale_study`` draws such queries and keys for growing ``d_k`` and measures, with and
without the scale: the logits' spread, how saturated the softmax is (its largest weight, on
average), and the size of the gradient softmax passes back for an output gradient ``dP`` of unit
variance (the mean norm of a row of ``dS``, computed by tinyattn's own backward).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np


@dataclass(frozen=True)
class ScaleRow:
    """One ``d_k``'s measurements: each pair is (without the scale, with it)."""

    d_k: int
    logit_std: tuple[float, float]  # the standard deviation of the logits
    max_weight: tuple[float, float]  # the softmax's largest weight, averaged over the queries (1/n: uniform)
    grad_norm: tuple[float, float]  # the norm of a row of dS, the gradient softmax passes back, averaged


def scale_study(d_ks: Sequence[int] = (4, 16, 64, 256, 1024), keys: int = 32, queries: int = 256,
                seed: int = 0) -> list[ScaleRow]:
    """Measure softmax(Q Kᵀ) against softmax(Q Kᵀ / √d_k) for unit-variance queries and keys of each ``d_k``."""
    import tinyattn as ta

    if not d_ks or any(int(d) < 1 for d in d_ks):
        raise ValueError(f"scale_study: d_ks must be whole numbers >= 1, got {tuple(d_ks)}")
    if keys < 2 or queries < 1:
        raise ValueError(f"scale_study: needs keys >= 2 and queries >= 1, got keys={keys}, queries={queries}")
    rng = np.random.default_rng(seed)
    rows = []
    for d_k in d_ks:
        q = rng.standard_normal((queries, int(d_k)))
        k = rng.standard_normal((keys, int(d_k)))
        grad_p = rng.standard_normal((queries, keys))  # an upstream gradient dP of unit variance
        measured: dict[str, list[float]] = {"std": [], "max": [], "grad": []}
        for scale in (1.0, 1.0 / np.sqrt(d_k)):
            logits = ta.tensor(q @ k.T * scale, requires_grad=True)  # S = Q Kᵀ (· 1/√d_k)
            weights = logits.softmax(dim=-1)  # P = softmax(S)
            weights.backward(ta.tensor(grad_p))  # dS = P ⊙ (dP − rowsum(dP ⊙ P))
            measured["std"].append(float(logits.detach().numpy().std()))
            measured["max"].append(float(weights.detach().numpy().max(axis=-1).mean()))
            grad_s = logits.grad  # dS, filled by softmax's backward
            assert grad_s is not None
            measured["grad"].append(float(np.linalg.norm(grad_s.numpy(), axis=-1).mean()))
        rows.append(ScaleRow(int(d_k), _pair(measured["std"]), _pair(measured["max"]), _pair(measured["grad"])))
    return rows


def _pair(values: list[float]) -> tuple[float, float]:
    return (values[0], values[1])


def scale_table(rows: Sequence[ScaleRow]) -> str:
    """The measurements as a text table: one line per ``d_k``, without and with the scale side by side."""
    header = (f"{'d_k':>5}  {'√d_k':>6}  {'std of logits':>17}  {'largest weight':>16}  "
              f"{'|dS| per row':>15}")
    under = (f"{'':>5}  {'':>6}  {'no scale':>8} {'scaled':>8}  {'no scale':>8} {'scaled':>7}  "
             f"{'no scale':>8} {'scaled':>6}")
    lines = [header, under, "-" * len(header)]
    for r in rows:
        lines.append(f"{r.d_k:>5}  {np.sqrt(r.d_k):>6.2f}  {r.logit_std[0]:>8.2f} {r.logit_std[1]:>8.2f}  "
                     f"{r.max_weight[0]:>8.3f} {r.max_weight[1]:>7.3f}  {r.grad_norm[0]:>8.4f} {r.grad_norm[1]:>6.4f}")
    return "\n".join(lines)


def scale_figure(rows: Sequence[ScaleRow], path: str | None = None) -> Any:
    """Three panels against ``d_k``: the logits' spread, the softmax's saturation, the gradient it passes back;
    without the scale and with it (a matplotlib ``Figure``, made without pyplot; saved to ``path`` if given)."""
    from .graph import notebook_figure

    figure = notebook_figure(figsize=(11, 3.4))
    d_ks = [r.d_k for r in rows]
    panels = [("std of the logits", [r.logit_std for r in rows]),
              ("largest softmax weight", [r.max_weight for r in rows]),
              ("|dS| per row (the softmax's gradient)", [r.grad_norm for r in rows])]
    for i, (title, pairs) in enumerate(panels):
        axes = figure.add_subplot(1, 3, i + 1)
        axes.plot(d_ks, [p[0] for p in pairs], "o-", label="softmax(Q Kᵀ)")
        axes.plot(d_ks, [p[1] for p in pairs], "s-", label="softmax(Q Kᵀ / √d_k)")
        axes.set_xscale("log", base=2)
        axes.set_xlabel("d_k")
        axes.set_title(title, fontsize=10)
    figure.axes[0].legend(fontsize=8)
    figure.tight_layout()
    if path is not None:
        figure.savefig(path)
    return figure


def scale_walkthrough() -> str:
    """What ``python -m tinyattn.explain --scale`` prints: the argument in short, then the measured table."""
    rows = scale_study()
    return "\n".join([
        "Why attention divides by √d_k",
        "",
        "For q and k with d_k independent entries of variance 1, q·k = Σ q_i k_i has variance d_k: the",
        "logits spread as √d_k. Softmax of logits that far apart is nearly one-hot, where its gradient",
        "dS = P ⊙ (dP − rowsum(dP ⊙ P)) nearly vanishes; every gradient reaching Q and K passes through",
        "it (dQ = dS K, dK = (dS)ᵀ Q). Dividing by √d_k gives the logits variance 1 at every d_k.",
        "",
        f"Measured with tinyattn ({len(rows)} sizes, 256 queries against 32 keys, unit-variance dP):",
        "",
        scale_table(rows),
    ])
