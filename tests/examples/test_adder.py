"""The adder's GPT: a KV cache that gives the uncached model's logits at every step, a causal mask
that hides the future, a gradcheck of one block, and checks that catch the classic cache bugs."""

import importlib.util
import os

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.autograd import gradcheck

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("train_adder", os.path.join(ROOT, "examples", "train_adder.py"))
adder = importlib.util.module_from_spec(spec)
spec.loader.exec_module(adder)

PATHS = ["sdpa", "composed"]


def random_model(seed, attention, block_size=12, n_layer=2):
    """float64, with weights far from the init (large enough that every position matters)."""
    ta.manual_seed(seed)
    model = adder.GPT(vocab_size=10, block_size=block_size, n_layer=n_layer, n_head=3, d_model=24,
                      attention=attention).double()
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        p.array[...] = rng.standard_normal(p.shape) * 0.5
    return model


def cache_gap(model, prompt, new_tokens):
    """The largest difference between cached and uncached logits over every step of greedy decoding."""
    with_cache, steps_a = model.generate(prompt, new_tokens, use_cache=True, greedy=True)
    without, steps_b = model.generate(prompt, new_tokens, use_cache=False, greedy=True)
    gap = max(float(np.max(np.abs(a.numpy() - b.numpy()))) for a, b in zip(steps_a, steps_b))
    return gap, with_cache.numpy(), without.numpy()


@pytest.mark.parametrize("attention", PATHS)
@pytest.mark.parametrize(("prompt_len", "batch"), [(1, 1), (2, 3), (4, 2), (7, 1)])
def test_cached_generation_gives_the_uncached_logits_at_every_step(attention, prompt_len, batch):
    model = random_model(prompt_len * 10 + batch, attention)
    prompt = ta.tensor(np.random.default_rng(batch).integers(0, 10, (batch, prompt_len)))
    gap, tokens_cached, tokens_uncached = cache_gap(model, prompt, 12 - prompt_len)
    assert gap <= 1e-10
    np.testing.assert_array_equal(tokens_cached, tokens_uncached)  # greedy decoding: the same tokens
    assert tokens_cached.shape == (batch, 12)


def test_the_two_attention_paths_agree():
    a, b = random_model(3, "sdpa"), random_model(3, "composed")
    idx = ta.tensor(np.random.default_rng(0).integers(0, 10, (2, 9)))
    with ta.no_grad():
        np.testing.assert_allclose(a(idx).numpy(), b(idx).numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("attention", PATHS)
@pytest.mark.parametrize("changed", [0, 3, 8])
def test_changing_a_later_token_never_changes_an_earlier_positions_logits(attention, changed):
    model = random_model(5, attention)
    rng = np.random.default_rng(changed)
    idx = rng.integers(0, 10, (2, 9))
    other = idx.copy()
    other[:, changed] = (other[:, changed] + 1 + rng.integers(0, 9, 2)) % 10
    with ta.no_grad():
        a, b = model(ta.tensor(idx)).numpy(), model(ta.tensor(other)).numpy()
    np.testing.assert_array_equal(a[:, :changed], b[:, :changed])  # the past cannot see the future
    assert np.all(np.abs(a[:, changed:] - b[:, changed:]).max(axis=-1) > 1e-6)  # ... and the rest does change


@pytest.mark.parametrize("attention", PATHS)
def test_gradcheck_of_one_block(attention):
    ta.manual_seed(0)
    block = adder.Block(6, 2, attention).double()
    x = ta.tensor(np.random.default_rng(1).standard_normal((2, 4, 6)), requires_grad=True)
    params = list(block.parameters())
    assert gradcheck(lambda x, *ps: block(x), (x, *params))


# -- the checks above catch the bugs that ship in KV caches ------------------------------------------


def test_a_cache_that_drops_the_current_token_is_caught(monkeypatch):
    real = ta.cat

    def cat_without_the_new_keys(tensors, dim=0):
        return tensors[0] if dim == 2 else real(tensors, dim=dim)  # keys/values: the cache only

    model = random_model(1, "composed")
    prompt = ta.tensor([[1, 2, 3]])
    assert cache_gap(model, prompt, 5)[0] <= 1e-10
    monkeypatch.setattr(ta, "cat", cat_without_the_new_keys)
    assert cache_gap(model, prompt, 5)[0] > 1e-3


def test_a_cache_that_restarts_the_positions_is_caught(monkeypatch):
    real = ta.arange
    monkeypatch.setattr(ta, "arange", lambda start, end=None, **kw: real(end - start if end is not None else start))
    model = random_model(2, "sdpa")
    assert cache_gap(model, ta.tensor([[4, 5]]), 6)[0] > 1e-3  # every cached step reads position 0's embedding


def test_a_top_left_causal_mask_over_the_cache_is_caught(monkeypatch):
    real = adder.F.scaled_dot_product_attention
    monkeypatch.setattr(adder.F, "scaled_dot_product_attention",
                        lambda q, k, v, attn_mask=None, is_causal=False: real(q, k, v, is_causal=True))
    model = random_model(3, "sdpa")
    assert cache_gap(model, ta.tensor([[7, 1, 2]]), 5)[0] > 1e-3  # the one new query would see key 0 only


def test_generation_beyond_the_block_size_is_refused():
    model = random_model(0, "sdpa", block_size=4)
    with pytest.raises(ValueError, match="5 positions exceed block_size 4"):
        model.generate(ta.tensor([[1, 2, 3]]), 3)  # the third new token needs a fifth position


def test_sampling_with_top_k_keeps_to_the_k_likeliest(monkeypatch):
    model = random_model(4, "sdpa")
    prompt = ta.tensor(np.zeros((64, 1), dtype=np.int64))
    ta.manual_seed(0)
    out, steps = model.generate(prompt, 1, top_k=2, temperature=0.7)
    allowed = np.argsort(steps[0].numpy()[0])[-2:]
    assert set(out.numpy()[:, 1]) <= set(allowed) and len(set(out.numpy()[:, 1])) == 2


def test_the_digits_are_encoded_with_the_sum_reversed():
    seqs = adder.encode(np.array([23, 99]), np.array([49, 1]), 2)
    np.testing.assert_array_equal(seqs, [[2, 3, 4, 9, 2, 7, 0], [9, 9, 0, 1, 0, 0, 1]])
    train, test = adder.split_problems(2, np.random.default_rng(0))
    assert len(test) == 500 and not set(train) & set(test) and len(train) + len(test) == 10_000
