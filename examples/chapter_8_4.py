"""The §8.4 demo on tinyattn: multi-head self-attention on a random batch, and its per-head heatmaps.

    python examples/chapter_8_4.py [--out figures]

Prints the three shapes the chapter prints and saves
``figures/ch8.4-multi-head-attn-weights.svg``: one heatmap per head of the
attention weights of the first sequence (query position down, key position across).
"""

import argparse
import os

import matplotlib
import matplotlib.pyplot as plt  # the backend is matplotlib's choice (Agg without a display, inline in Jupyter)
import numpy as np

import tinyattn as ta
from tinyattn import nn


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--out", default="figures", help="folder for the figure")
    parser.add_argument("--seed", type=int, default=0, help="seed of the input and the weights")
    args = parser.parse_args()
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        parser.error(f"--out: {args.out} is a file, not a folder")

    ta.manual_seed(args.seed)
    num_heads = 2
    x = ta.randn(3, 5, 16)  # (B, n, d_model)
    # Self-attention: query, key and value are all x. Pass other tensors as key/value for cross-attention.
    multihead_attn = nn.MultiheadAttention(embed_dim=16, num_heads=num_heads, batch_first=True)

    with ta.no_grad():
        output, attn_weights = multihead_attn(x, x, x, need_weights=True, average_attn_weights=False)

    print("Input shape:", x.shape)
    print("Attention weights shape:", attn_weights.shape)  # (B, h, n, n)
    print("Output shape:", output.shape)

    weights = attn_weights.numpy()[0]  # (h, n, n), the first sequence
    top = float(np.ceil(weights.max() * 10) / 10)  # the colour scale reaches the largest weight
    print(f"Colour scale: 0 to {top:g} (largest weight {weights.max():.3f})")
    fig = plt.figure(1, figsize=(4 * num_heads, 3))
    axes = fig.subplots(1, num_heads)
    for i, ax in enumerate(axes):
        im = ax.pcolormesh(weights[i], cmap="Blues", vmin=0, vmax=top)
        ticks = np.arange(x.size(-2))
        ax.set_xticks(ticks + 0.5, ticks)
        ax.set_yticks(ticks + 0.5, ticks)
        ax.set_aspect("equal")
        ax.set_xlabel("key/value position")
        ax.set_ylabel("query position")
        ax.set_title(f"Head {i + 1} Attention Weights")
        ax.invert_yaxis()
    fig.colorbar(im, ax=axes, ticks=np.arange(0, top + 0.05, 0.1))
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "ch8.4-multi-head-attn-weights.svg")
    fig.savefig(path, bbox_inches="tight")
    if "inline" in matplotlib.get_backend():  # run in a notebook (%run): show it there too
        plt.show()
    else:
        plt.close(fig)
    print("Saved", path)


if __name__ == "__main__":
    main()
