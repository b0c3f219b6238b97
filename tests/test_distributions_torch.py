"""``tinyattn.distributions`` against ``torch.distributions`` in float64: log_prob, entropy, kl_divergence, the
moments, and their gradients in every parameter; rsample's reparameterized gradient; sample's frequencies;
torch's refusals."""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _program(lib, rng):
    D = lib.distributions
    loc = lib.tensor(rng.standard_normal(3), requires_grad=True)
    scale = lib.tensor(np.exp(rng.standard_normal(3)), requires_grad=True)
    logits = lib.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    coin = lib.tensor(rng.standard_normal(3), requires_grad=True)
    low = lib.tensor(rng.standard_normal(3), requires_grad=True)
    normal = D.Normal(loc, scale)
    other = D.Normal(lib.tensor(0.5, dtype=lib.float64), lib.tensor(2.0, dtype=lib.float64))
    cat, even = D.Categorical(logits=logits), D.Categorical(probs=lib.tensor(np.full((3, 4), 0.25)))
    bern, fixed = D.Bernoulli(logits=coin), D.Bernoulli(probs=lib.tensor([0.3, 0.6, 0.9], dtype=lib.float64))
    uni, wide = D.Uniform(low, low + 2.0), D.Uniform(low.detach() - 1, low.detach() + 3.0)
    x = lib.tensor(rng.standard_normal(3))
    terms = [normal.log_prob(x), normal.entropy(), D.kl_divergence(normal, other), cat.log_prob(lib.tensor([0, 3, 1])),
             cat.entropy(), D.kl_divergence(cat, even), bern.log_prob(lib.tensor([1.0, 0.0, 1.0], dtype=lib.float64)),
             bern.entropy(), D.kl_divergence(bern, fixed), uni.log_prob(low + 0.5), uni.entropy(),
             D.kl_divergence(uni, wide), normal.variance, normal.stddev, uni.mean, uni.variance, bern.variance]
    weights = [lib.tensor(rng.standard_normal(3)) for _ in terms]
    sum(((t * w).sum() for t, w in zip(terms, weights)), lib.tensor(0.0, dtype=lib.float64)).backward()
    return [t.detach().numpy() for t in terms] + [p.grad.numpy() for p in (loc, scale, logits, coin, low)]


def test_log_prob_entropy_kl_and_moments_match_torch_with_their_gradients():
    ours = _program(ta, np.random.default_rng(0))
    theirs = _program(torch, np.random.default_rng(0))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_rsample_is_reparameterized():
    """d sample / d loc = 1 and d sample / d scale = eps = (sample - loc) / scale, for each draw."""
    loc = ta.tensor([0.5, -1.0], dtype=ta.float64, requires_grad=True)
    scale = ta.tensor([2.0, 0.3], dtype=ta.float64, requires_grad=True)
    draw = ta.distributions.Normal(loc, scale).rsample((4,))
    assert draw.shape == (4, 2)
    draw.sum().backward()
    eps = (draw.detach().numpy() - loc.detach().numpy()) / scale.detach().numpy()
    np.testing.assert_allclose(loc.grad.numpy(), [4.0, 4.0])
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0), rtol=1e-12)
    low, high = ta.tensor(1.0, requires_grad=True), ta.tensor(3.0, requires_grad=True)
    u = ta.distributions.Uniform(low, high).rsample((1000,))
    u.sum().backward()
    assert 1.0 <= u.min().item() and u.max().item() < 3.0
    np.testing.assert_allclose(low.grad.item() + high.grad.item(), 1000.0, rtol=1e-5)  # d(low + (high-low)u)


def test_samples_follow_the_probabilities():
    ta.manual_seed(0)
    counts = np.bincount(ta.distributions.Categorical(probs=ta.tensor([0.1, 0.6, 0.3])).sample((20000,)).numpy(),
                         minlength=3) / 20000
    np.testing.assert_allclose(counts, [0.1, 0.6, 0.3], atol=0.015)
    ones = ta.distributions.Bernoulli(probs=ta.tensor([0.2, 0.9])).sample((20000,)).numpy().mean(0)
    np.testing.assert_allclose(ones, [0.2, 0.9], atol=0.015)
    normal = ta.distributions.Normal(ta.tensor(1.0), ta.tensor(3.0)).sample((20000,)).numpy()
    assert abs(normal.mean() - 1.0) < 0.1 and abs(normal.std() - 3.0) < 0.1


def test_refusals_are_torchs():
    for lib in (ta, torch):
        D = lib.distributions
        with pytest.raises(ValueError, match="Expected parameter scale"):
            D.Normal(lib.tensor([0.0]), lib.tensor([-1.0]))
        with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both"):
            D.Bernoulli(probs=lib.tensor([0.5]), logits=lib.tensor([0.0]))
        with pytest.raises(NotImplementedError):
            D.Bernoulli(probs=lib.tensor([0.5])).rsample()
