"""``tinyattn.func`` against ``torch.func`` in float64: each transform on seeded random programs, nested as
tutorials nest them (per-sample gradients with ``vmap(grad(...))``, Hessians, model ensembles), with pytrees,
``argnums``, ``has_aux``, and torch's refusals. (Without torch: test_func.py.)"""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

TOL = dict(rtol=1e-8, atol=1e-10)


def _leaves(tree):
    if isinstance(tree, dict):
        return [leaf for key in sorted(tree) for leaf in _leaves(tree[key])]
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [tree.detach().numpy() if hasattr(tree, "detach") else np.asarray(tree)]


def _same(ours, theirs):
    a, b = _leaves(ours), _leaves(theirs)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape
        np.testing.assert_allclose(x, y, **TOL)


def _both(program, seed):
    """``program(lib, func, rng)`` run with tinyattn and with torch, each from the same seed."""
    return (program(ta, ta.func, np.random.default_rng(seed)),
            program(torch, torch.func, np.random.default_rng(seed)))


def _mlp_loss(lib):
    def loss(params, x, y):
        h = (x @ params["w1"] + params["b1"]).tanh()
        return ((h @ params["w2"]).squeeze(-1) - y).pow(2).mean()
    return loss


def _params(lib, rng):
    return {"w1": lib.tensor(rng.standard_normal((3, 4))), "b1": lib.tensor(rng.standard_normal(4)),
            "w2": lib.tensor(rng.standard_normal((4, 1)))}


PROGRAMS = {
    "grad_of_a_dict_of_params": lambda lib, F, rng: F.grad(_mlp_loss(lib))(
        _params(lib, rng), lib.tensor(rng.standard_normal((5, 3))), lib.tensor(rng.standard_normal(5))),
    "per_sample_gradients": lambda lib, F, rng: F.vmap(F.grad(_mlp_loss(lib)), in_dims=(None, 0, 0))(
        _params(lib, rng), lib.tensor(rng.standard_normal((6, 3))), lib.tensor(rng.standard_normal(6))),
    "grad_and_value_argnums_has_aux": lambda lib, F, rng: F.grad_and_value(
        lambda a, b: ((a * b).sin().sum(), {"norm": a.norm()}), argnums=(0, 1), has_aux=True)(
        lib.tensor(rng.standard_normal((2, 3))), lib.tensor(rng.standard_normal((2, 3)))),
    "grad_of_grad": lambda lib, F, rng: F.grad(F.grad(lambda x: (x.sin() * x.exp()).sum()))(
        lib.tensor(rng.standard_normal(()))),
    "vjp": lambda lib, F, rng: (lambda out_fn, v: (out_fn[0], out_fn[1](v)))(
        F.vjp(lambda a, b: (a @ b).softmax(-1), lib.tensor(rng.standard_normal((3, 4))),
              lib.tensor(rng.standard_normal((4, 2)))), lib.tensor(rng.standard_normal((3, 2)))),
    "jvp": lambda lib, F, rng: F.jvp(lambda a, b: ((a @ b).tanh(), a.exp().sum()), *[
        (lib.tensor(rng.standard_normal((3, 4))), lib.tensor(rng.standard_normal((4, 2)))) for _ in range(2)]),
    "jacrev_argnums": lambda lib, F, rng: F.jacrev(lambda a, b: (a @ b).softmax(-1), argnums=(0, 1))(
        lib.tensor(rng.standard_normal((2, 3))), lib.tensor(rng.standard_normal((3, 2)))),
    "jacfwd_two_outputs": lambda lib, F, rng: F.jacfwd(lambda x: (x.exp(), (x * x).sum(0)))(
        lib.tensor(rng.standard_normal((2, 3)))),
    "jacrev_equals_jacfwd_on_attention": lambda lib, F, rng: (lambda q, k, v: (
        F.jacrev(lambda q: lib.nn.functional.scaled_dot_product_attention(q, k, v))(q),
        F.jacfwd(lambda q: lib.nn.functional.scaled_dot_product_attention(q, k, v))(q)))(
        *(lib.tensor(rng.standard_normal((1, 3, 2))) for _ in range(3))),
    "hessian": lambda lib, F, rng: F.hessian(lambda x: (x.softmax(-1) * x.exp()).sum() + x.norm())(
        lib.tensor(rng.standard_normal((2, 3)))),
    "hessian_argnums": lambda lib, F, rng: F.hessian(lambda a, b: (a.sin() @ b).pow(2).sum(), argnums=(0, 1))(
        lib.tensor(rng.standard_normal((2, 2))), lib.tensor(rng.standard_normal((2, 3)))),
    "vmap_in_dims_out_dims": lambda lib, F, rng: F.vmap(lambda a, b: (a * b, a.sum()), in_dims=(1, None),
                                                       out_dims=(0, 0))(
        lib.tensor(rng.standard_normal((3, 5))), lib.tensor(rng.standard_normal(3))),
    "vmap_nested": lambda lib, F, rng: F.vmap(F.vmap(lambda a, b: a @ b))(
        lib.tensor(rng.standard_normal((2, 3, 4))), lib.tensor(rng.standard_normal((2, 3, 4)))),
    "vmap_of_jacrev": lambda lib, F, rng: F.vmap(F.jacrev(lambda x: x.softmax(-1)))(
        lib.tensor(rng.standard_normal((4, 3)))),
    "vmap_out_dims_1": lambda lib, F, rng: F.vmap(lambda x: x.exp(), out_dims=1)(
        lib.tensor(rng.standard_normal((4, 3)))),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_transforms_match_torch(name):
    ours, theirs = _both(PROGRAMS[name], sum(map(ord, name)))
    _same(ours, theirs)


def test_functional_call_and_an_ensemble_by_vmap_match_torch():
    """torch's model-ensembling recipe: stack_module_state, then vmap over functional_call."""
    rng = np.random.default_rng(3)
    ours = [ta.nn.Sequential(ta.nn.Linear(3, 4), ta.nn.Tanh(), ta.nn.Linear(4, 2)).double() for _ in range(3)]
    theirs = [torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
              for _ in range(3)]
    for a, b in zip(ours, theirs):
        b.load_state_dict({k: torch.tensor(v.numpy()) for k, v in a.state_dict().items()})
    data = rng.standard_normal((5, 3))
    results = []
    for lib, models in ((ta, ours), (torch, theirs)):
        params, buffers = lib.func.stack_module_state(models)
        base = models[0]

        def one(p, b, x, base=base, lib=lib):
            return lib.func.functional_call(base, (p, b), (x,))

        results.append(lib.func.vmap(one, in_dims=(0, 0, None))(params, buffers, lib.tensor(data)))
        before = [p.detach().numpy().copy() for p in base.parameters()]
        assert all(np.array_equal(p.detach().numpy(), q) for p, q in zip(base.parameters(), before))
    _same(results[0], results[1])


def test_functional_call_takes_a_tied_weight_under_either_name_as_torch():
    rng = np.random.default_rng(4)
    results = []
    for lib in (ta, torch):
        model = lib.nn.Sequential(lib.nn.Linear(3, 3, bias=False), lib.nn.Linear(3, 3, bias=False)).double()
        model[1].weight = model[0].weight
        w = lib.tensor(rng.standard_normal((3, 3)))
        results.append(lib.func.functional_call(model, {"0.weight": w}, lib.tensor(np.ones((1, 3)))))
        rng = np.random.default_rng(4)
    _same(results[0], results[1])


@pytest.mark.parametrize("call, message", [
    (lambda lib, F: F.grad(lambda x: x * 2)(lib.ones(3, dtype=lib.float64)), "Expected f\\(\\*args\\) to return a "
                                                                             "scalar Tensor"),
    (lambda lib, F: F.vmap(lambda a, b: a + b)(lib.ones(2), lib.ones(3)), "same size in the mapped dimension"),
    (lambda lib, F: F.vmap(lambda a: a, in_dims=2)(lib.ones(2, 3)), "expected in_dim to satisfy"),
    (lambda lib, F: F.vmap(lambda a: 1.0)(lib.ones(2)), "must only return Tensors"),
    (lambda lib, F: F.jvp(lambda a: a, lib.ones(2), lib.ones(2)), "Expected primals to be a tuple"),
    (lambda lib, F: F.grad(lambda a: (a.sum(), 1), has_aux=False)(lib.ones(2)), "Expected f\\(\\*args\\) to return"),
], ids=["grad_non_scalar", "vmap_sizes", "vmap_in_dim", "vmap_non_tensor", "jvp_tuples", "grad_tuple"])
def test_refusals_are_torchs(call, message):
    for lib in (ta, torch):
        with pytest.raises((RuntimeError, ValueError), match=message):
            call(lib, lib.func)


def test_jacfwd_of_jacfwd_is_the_hessian_as_torchs():
    """Forward mode has one level at a time here: the inner jacfwd computes the same Jacobian by reverse mode."""
    def program(lib, F, rng):
        x = lib.tensor(rng.standard_normal(4))
        f = lambda t: (t.sin() * t.exp()).sum() + (t.softmax(0) * t).sum()  # noqa: E731
        return F.jacfwd(F.jacfwd(f))(x), F.hessian(f)(x)

    ours, theirs = _both(program, 5)
    _same(ours, theirs)


def test_functionalize_gives_the_same_results_as_torchs():
    def program(lib, F, rng):
        def f(x):
            y = x.clone()
            y.mul_(2.0)
            y.add_(1.0)
            return y.tanh()

        return F.functionalize(f)(lib.tensor(rng.standard_normal(4)))

    ours, theirs = _both(program, 6)
    _same(ours, theirs)
