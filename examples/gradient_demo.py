"""Backpropagate through a small expression and print each gradient beside finite differences.

    python examples/gradient_demo.py [--seed 0] [--eps 1e-6]
"""

import argparse

import numpy as np

import tinyattn as ta


def loss_fn(x: ta.Tensor, w: ta.Tensor) -> ta.Tensor:
    """L = sum(softmax(x @ w) * target) -- a tiny attention-like expression."""
    target = ta.tensor(np.array([[0.1, 0.7, 0.2], [0.5, 0.2, 0.3]]))
    return ((x @ w).softmax(dim=-1) * target).sum()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of x and w")
    parser.add_argument("--eps", type=float, default=1e-6, help="step of the central finite differences")
    args = parser.parse_args()
    if not 0 < args.eps < 1:
        parser.error(f"--eps: must be in (0, 1), got {args.eps}")
    ta.manual_seed(args.seed)
    x = ta.randn(2, 4, dtype=ta.float64, requires_grad=True)
    w = ta.randn(4, 3, dtype=ta.float64, requires_grad=True)
    loss = loss_fn(x, w)
    loss.backward()
    print(f"L = sum(softmax(x @ w) * target) = {loss.item():.6f}\n")

    eps = args.eps
    for name, t in [("x", x), ("w", w)]:
        numeric = np.zeros(t.shape)
        for idx in np.ndindex(t.shape):
            orig = t.data[idx].item()  # .data: the same memory, outside the graph (torch's spelling)
            t.data[idx] = orig + eps
            plus = loss_fn(x, w).item()
            t.data[idx] = orig - eps
            minus = loss_fn(x, w).item()
            t.data[idx] = orig
            numeric[idx] = (plus - minus) / (2 * eps)
        print(f"dL/d{name} {t.shape}   backward | finite difference")
        for idx in np.ndindex(t.shape):
            print(f"  {name}{list(idx)}  {t.grad[idx].item(): .8f} | {numeric[idx]: .8f}")
        print(f"  max |difference| = {np.abs(t.grad.numpy() - numeric).max():.2e}\n")


if __name__ == "__main__":
    main()
