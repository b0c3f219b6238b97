"""Why √d_k (``tinyattn.explain.scale``): the measured numbers show what the argument says, the page quotes the
explainer's real output, and the gradient it measures is softmax's backward."""

import pathlib
import re

import numpy as np
import pytest

from tinyattn.explain import mha as explain
from tinyattn.explain.scale import scale_figure, scale_study, scale_table, scale_walkthrough

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def rows():
    return scale_study()


def test_without_the_scale_the_logits_spread_as_sqrt_d_k_and_with_it_stay_at_one(rows):
    for r in rows:
        assert abs(r.logit_std[0] / np.sqrt(r.d_k) - 1) < 0.1, r
        assert abs(r.logit_std[1] - 1) < 0.1, r


def test_without_the_scale_softmax_saturates_and_its_gradient_shrinks_with_it_neither(rows):
    unscaled_max = [r.max_weight[0] for r in rows]
    unscaled_grad = [r.grad_norm[0] for r in rows]
    assert unscaled_max == sorted(unscaled_max) and unscaled_max[-1] > 0.95
    assert unscaled_grad == sorted(unscaled_grad, reverse=True)
    ratio = unscaled_grad[0] / unscaled_grad[-1]
    assert 5 < ratio < 9  # (docs/attention_scale.md: "about 7 times")
    scaled_max = [r.max_weight[1] for r in rows]
    scaled_grad = [r.grad_norm[1] for r in rows]
    assert max(scaled_max) - min(scaled_max) < 0.03 and max(scaled_max) < 0.25
    assert max(scaled_grad) / min(scaled_grad) < 1.15


def test_the_gradient_measured_is_softmax_s_backward_formula():
    """dS = P ⊙ (dP − rowsum(dP ⊙ P)), written out in NumPy for the same draws, has the measured mean row norm."""
    (row,) = scale_study(d_ks=(8,), keys=5, queries=7, seed=3)
    rng = np.random.default_rng(3)
    q, k, dp = rng.standard_normal((7, 8)), rng.standard_normal((5, 8)), rng.standard_normal((7, 5))
    for i, scale in enumerate((1.0, 1 / np.sqrt(8))):
        s = q @ k.T * scale
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        ds = p * (dp - (dp * p).sum(-1, keepdims=True))
        assert np.isclose(row.logit_std[i], s.std())
        assert np.isclose(row.max_weight[i], p.max(-1).mean())
        assert np.isclose(row.grad_norm[i], np.linalg.norm(ds, axis=-1).mean())


def test_the_page_quotes_the_explainer_s_output(capsys):
    page = (ROOT / "docs" / "attention_scale.md").read_text(encoding="utf-8")
    quoted = page.split("```text\n", 1)[1].split("```", 1)[0].rstrip("\n")
    explain.main(["--scale"])
    assert capsys.readouterr().out.rstrip("\n") == quoted == scale_walkthrough()


def test_the_table_and_figure_have_a_line_and_three_panels_per_measure(rows, tmp_path):
    lines = scale_table(rows).splitlines()
    assert len(lines) == 3 + len(rows) and all(re.match(rf"\s*{r.d_k}\s", line) for r, line in zip(rows, lines[3:]))
    figure = scale_figure(rows, str(tmp_path / "scale.png"))
    assert len(figure.axes) == 3 and (tmp_path / "scale.png").stat().st_size > 1000


@pytest.mark.parametrize("kwargs, message", [
    (dict(d_ks=()), "d_ks must be whole numbers >= 1, got ()"),
    (dict(d_ks=(4, 0)), "d_ks must be whole numbers >= 1, got (4, 0)"),
    (dict(keys=1), "needs keys >= 2 and queries >= 1, got keys=1, queries=256"),
])
def test_bad_arguments_are_refused_clearly(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        scale_study(**kwargs)
