"""In-place ops and item assignment against torch: random programs mixing them with out-of-place ops,
on leaves under no_grad and on non-leaves in the graph, compared for values, gradients and errors.
"""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

SHAPE = (3, 4)


def in_place_step(rng):
    """One in-place change ``(name, fn(t, lib))``: the same call in both libraries."""
    kind = int(rng.integers(11))
    other = rng.standard_normal(SHAPE)
    row = rng.standard_normal(4)
    mask = rng.random(SHAPE) > 0.5
    scalar = float(rng.uniform(0.5, 2.0))
    index = int(rng.integers(3))
    steps = [
        ("add_", lambda t, lib, o: t.add_(o)),
        ("sub_ alpha", lambda t, lib, o: t.sub_(o, alpha=scalar)),
        ("mul_", lambda t, lib, o: t.mul_(o)),
        ("div_", lambda t, lib, o: t.div_(o.abs() + 1)),
        ("+= scalar", lambda t, lib, o: t.__iadd__(scalar)),
        ("*= tensor", lambda t, lib, o: t.__imul__(o)),
        ("masked_fill_", lambda t, lib, o: t.masked_fill_(lib.tensor(mask), scalar)),
        ("clamp_", lambda t, lib, o: t.clamp_(-0.5, 0.5)),
        ("setitem row", lambda t, lib, o: t.__setitem__(index, o[0] * 2)),
        ("setitem mask", lambda t, lib, o: t.__setitem__(lib.tensor(mask), scalar)),
        ("setitem slice", lambda t, lib, o: t.__setitem__((slice(None), slice(0, 4, 2)), o[:, :2])),
    ]
    name, fn = steps[kind]
    return name, fn, other, row


def out_of_place_step(rng):
    kind = int(rng.integers(4))
    return [lambda t: t * 2 + 1, lambda t: t.tanh(), lambda t: t.exp(), lambda t: t.softmax(-1)][kind]


def program(seed):
    """A list of steps: out-of-place ops and in-place ones (each with its own operand)."""
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(int(rng.integers(2, 6))):
        if rng.random() < 0.5:
            steps.append(("op", out_of_place_step(rng), None))
        else:
            name, fn, other, _ = in_place_step(rng)
            steps.append((name, fn, other))
    return rng.standard_normal(SHAPE), steps, rng.standard_normal(SHAPE)


def run(lib, seed):
    start, steps, upstream = program(seed)
    x = lib.tensor(start, requires_grad=True)
    operands = []
    t = x * 1  # a non-leaf: in-place changes to it are recorded in the graph
    try:
        for name, fn, other in steps:
            if name == "op":
                t = fn(t)
            else:
                o = lib.tensor(other, requires_grad=True)
                operands.append(o)
                fn(t, lib, o)
        t.backward(lib.tensor(upstream))
    except RuntimeError as err:
        return "error", type(err), str(err)
    values = t.detach().numpy().copy()
    grads = [x.grad.numpy()] + [o.grad.numpy() if o.grad is not None else None for o in operands]
    return "ok", values, grads


@pytest.mark.parametrize("seed", range(150))
def test_random_in_place_program_in_the_graph_matches_torch(seed):
    ours, theirs = run(ta, seed), run(torch, seed)
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "error":
        assert "modified by an inplace operation" in ours[2] and "modified by an inplace operation" in theirs[2]
        return
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10, atol=1e-12)
    for mine, other in zip(ours[2], theirs[2]):
        assert (mine is None) == (other is None)
        if mine is not None:
            np.testing.assert_allclose(mine, other, rtol=1e-9, atol=1e-12)


def run_no_grad(lib, seed):
    """The same in-place steps on a leaf parameter under no_grad (an optimizer's or an initializer's way)."""
    rng = np.random.default_rng(seed)
    w = lib.tensor(rng.standard_normal(SHAPE), requires_grad=True)
    with lib.no_grad():
        for _ in range(4):
            name, fn, other, row = in_place_step(rng)
            fn(w, lib, lib.tensor(other))
        w[0].zero_()  # through a view: the base changes
        w[:, 1].fill_(3.0)
    assert w.requires_grad and w.grad_fn is None
    return w.detach().numpy()


@pytest.mark.parametrize("seed", range(60))
def test_random_in_place_program_under_no_grad_matches_torch(seed):
    np.testing.assert_allclose(run_no_grad(ta, seed), run_no_grad(torch, seed), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("make", [
    lambda lib, x: x.exp(),  # exp saves its output: changing it in place must stop backward
    lambda lib, x: x.tanh(),
    lambda lib, x: x.sigmoid(),
])
def test_changing_a_saved_output_in_place_refuses_backward_as_torch(make):
    for lib in (ta, torch):
        x = lib.tensor(np.arange(3.0), requires_grad=True)
        y = make(lib, x)
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_changing_a_saved_input_in_place_refuses_backward_as_torch():
    for lib in (ta, torch):
        x = lib.tensor(np.arange(3.0), requires_grad=True)
        h = x * 1
        y = h * h  # Mul saves h
        h.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_the_tutorials_manual_update_trains_as_torch():
    """The PyTorch tutorial's polynomial fit with ``p -= learning_rate * p.grad`` (written here, in its style)."""
    def fit(lib):
        x = lib.linspace(-np.pi, np.pi, 2000, dtype=lib.float64)
        y = lib.sin(x)
        p = lib.tensor([1, 2, 3])
        xx = x.unsqueeze(-1).pow(p)
        model = lib.nn.Sequential(lib.nn.Linear(3, 1, dtype=lib.float64))
        with lib.no_grad():
            model[0].weight.copy_(lib.tensor([[0.1, -0.2, 0.05]], dtype=lib.float64))
            model[0].bias.fill_(0.3)
        learning_rate = 1e-6
        losses = []
        for _ in range(300):
            y_pred = model(xx).squeeze(-1)
            loss = ((y_pred - y) ** 2).sum()
            losses.append(loss.item())
            model.zero_grad()
            loss.backward()
            with lib.no_grad():
                for param in model.parameters():
                    param -= learning_rate * param.grad
        return losses

    ours, theirs = fit(ta), fit(torch)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9)
    assert ours[-1] < ours[0] / 5  # it trains: the rebinding slip would leave the loss where it started


def test_grad_and_data_are_tensors_as_in_torch():
    x = ta.randn(3, requires_grad=True)
    (x * x).sum().backward()
    assert isinstance(x.grad, ta.Tensor) and not x.grad.requires_grad
    assert x.grad.norm().item() > 0 and x.grad.zero_().tolist() == [0.0, 0.0, 0.0]
    d = x.data
    assert isinstance(d, ta.Tensor) and not d.requires_grad and d.grad_fn is None
    d.uniform_(-0.1, 0.1)  # the same memory: x changes
    assert np.all(np.abs(x.detach().numpy()) <= 0.1) and np.shares_memory(d.array, x.array)
    assert x.data.norm().item() >= 0
    (g,) = ta.autograd.grad((x * 3).sum(), x)
    assert isinstance(g, ta.Tensor) and g.tolist() == [3.0, 3.0, 3.0] and not g.requires_grad
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = np.zeros(3)
    with pytest.raises(RuntimeError, match="assigned grad has shape"):
        x.grad = ta.zeros(4)


def test_zero_grad_sets_none_by_default_as_torch():
    model = ta.nn.Linear(2, 2)
    model(ta.ones(1, 2)).sum().backward()
    opt = ta.optim.SGD(model.parameters(), lr=0.1)
    opt.zero_grad()
    assert model.weight.grad is None
    model(ta.ones(1, 2)).sum().backward()
    model.zero_grad(set_to_none=False)
    assert model.weight.grad is not None and not model.weight.grad.any()


@pytest.mark.parametrize("who", ["module", "optimizer"])
def test_zero_grad_without_none_zeroes_the_same_memory_as_torch(who):
    """set_to_none=False zeroes .grad in place: the same tensor, and a view or .numpy() of it reads the zeros."""
    versions = []
    for lib in (ta, torch):
        lib.manual_seed(0)
        model = lib.nn.Linear(3, 2)
        model(lib.ones(4, 3)).sum().backward()
        grad = model.weight.grad
        array, row, before = grad.numpy(), grad[0], grad._version
        forget = model.zero_grad if who == "module" else lib.optim.SGD(model.parameters(), lr=0.1).zero_grad
        forget(set_to_none=False)
        assert model.weight.grad is grad
        assert not array.any() and not row.numpy().any()
        versions.append(grad._version - before)
    assert versions[0] == versions[1]


@pytest.mark.parametrize("in_graph", [False, True])
def test_zero_grad_without_none_cuts_a_grad_that_requires_grad_out_of_its_graph_as_torch(in_graph):
    """A .grad assigned by hand may require grad (a leaf, or a result in a graph): zeroing it in place would be
    an in-place change to such a tensor, so torch detaches it first; its memory is zeroed all the same."""
    for lib in (ta, torch):
        model = lib.nn.Linear(2, 2)
        source = lib.ones(2, 2, requires_grad=True)
        model.weight.grad = source * 3 if in_graph else source
        memory = model.weight.grad.detach()
        model.zero_grad(set_to_none=False)
        grad = model.weight.grad
        assert not grad.requires_grad and grad.grad_fn is None
        assert grad.tolist() == [[0.0, 0.0], [0.0, 0.0]] and memory.tolist() == [[0.0, 0.0], [0.0, 0.0]]


@pytest.mark.parametrize("change", [
    lambda lib, y, x: y[0].add_(1),
    lambda lib, y, x: y.view(12).mul_(2),
    lambda lib, y, x: y.reshape(-1).__setitem__(lib.tensor(np.arange(12) % 5 == 0), -1e6),  # d2l's masked softmax
    lambda lib, y, x: y.t()[1:].add_(x.t()[1:] * 2),  # a view of a view, changed by a value in the graph
    lambda lib, y, x: y[:, 1].copy_(x[:, 0] ** 2),
    lambda lib, y, x: y.unsqueeze(0)[0, 2].mul_(x[2, 0]),
])
def test_an_in_place_change_to_a_view_rewrites_the_bases_history_as_torch(change):
    """The base sees the change and its gradient follows: the changed elements' gradient goes to the new value,
    the others' to the old base (torch's rebase of the base's history)."""
    start = np.random.default_rng(0).standard_normal((3, 4))
    results = []
    for lib in (ta, torch):
        x = lib.tensor(start, requires_grad=True)
        y = x * 2
        alias = y.view(3, 4)  # another view of the same memory sees the change too
        change(lib, y, x)
        weights = lib.tensor(np.random.default_rng(1).standard_normal((3, 4)))
        (y.softmax(-1) * weights).sum().backward()
        results.append((y.detach().numpy(), alias.detach().numpy(), x.grad.numpy()))
    for mine, other in zip(*results):
        np.testing.assert_allclose(mine, other, rtol=1e-12, atol=1e-12)


def test_a_saved_value_of_the_base_is_caught_after_a_view_changes_it():
    for lib in (ta, torch):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        z = y * y  # saves y
        y[0].mul_(3)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()


@pytest.mark.parametrize("change, message", [
    (lambda lib: lib.ones(3, requires_grad=True)[0:2].mul_(2), "a view of a leaf Variable that requires grad"),
    (lambda lib: (lib.ones(3, requires_grad=True) * 1).expand(2, 3).mul_(2),
     "more than one element of the written-to tensor refers to a single memory location"),
])
def test_an_in_place_change_to_a_view_is_refused_where_torch_refuses(change, message):
    for lib in (ta, torch):
        with pytest.raises(RuntimeError, match=message):
            change(lib)


def test_a_view_of_a_tensor_outside_the_graph_given_a_value_in_it_is_refused_clearly():
    y, x = ta.zeros(3), ta.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="an in-place change to a view of a tensor that does not require grad"):
        y[0:2].copy_(x * 2)


def test_setitem_gives_the_value_its_gradient_and_the_overwritten_elements_none():
    for lib in (ta, torch):
        x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        v = lib.tensor(np.array([10.0, 20.0]), requires_grad=True)
        y = x * 1
        y[:, 1] = v * 3
        (y * lib.tensor(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))).sum().backward()
        assert x.grad.tolist() == [[1.0, 0.0, 3.0], [4.0, 0.0, 6.0]]
        assert v.grad.tolist() == [6.0, 15.0]


def test_setitem_on_a_plain_tensor_with_a_value_that_requires_grad_joins_the_graph():
    for lib in (ta, torch):
        pe = lib.zeros(4, 6, dtype=lib.float64)
        w = lib.tensor(np.ones(4), requires_grad=True)
        position = lib.arange(4, dtype=lib.float64)
        pe[:, 0::2] = lib.sin(position.unsqueeze(1) * w.unsqueeze(1))
        pe.sum().backward()
        np.testing.assert_allclose(np.asarray(w.grad.numpy()), 3 * np.arange(4.0) * np.cos(np.arange(4.0)))


def test_in_place_int_from_float_is_refused_as_torch():
    for lib in (ta, torch):
        t = lib.tensor([1, 2])
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            t += 1.5
        t += 2
        assert t.tolist() == [3, 4]


def test_a_view_and_its_base_share_one_version_counter_as_torch():
    """An optimizer step on a parameter whose slice a node saved (MultiheadAttention's W^Q is
    ``in_proj_weight[:E]``), and an in-place change through a view of a saved tensor: both refuse."""
    for lib in (ta, torch):
        w = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        x = lib.tensor(np.ones(3), requires_grad=True)
        y = (w[0] * x).sum()  # Mul saved the view w[0]
        with lib.no_grad():
            w -= 0.1  # the step changes w, so the saved view changed too
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
        w2 = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        z = (w2 * x).sum()  # Mul saved w2
        with lib.no_grad():
            w2[1].zero_()  # through a view: w2 changed
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.backward()


def test_each_in_place_change_moves_the_version_counter_by_one_as_torch():
    """torch's ``_version``: one step per in-place change, on the counter a view shares with its base, whether the
    change goes through a view inside the graph (the base's history rewritten), through the base, or under no_grad."""
    seen = []
    for lib in (ta, torch):
        x = lib.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
        base = x * 1.0
        row = base[1]
        versions = [(base._version, row._version)]
        row.mul_(2)  # (a view, inside the graph)
        versions.append((base._version, row._version))
        base.sub_(1)  # (the base)
        versions.append((base._version, row._version))
        col = base[:, 2]
        col.add_(x[0, :3])  # (a view taken after the base's change)
        col.mul_(3)
        versions.append((base._version, row._version, col._version))
        with lib.no_grad():
            row.zero_()
        versions.append((base._version, row._version, col._version))
        seen.append(versions)
    assert seen[0] == seen[1]


def test_the_classic_slip_is_caught_in_multihead_attention():
    mha = ta.nn.MultiheadAttention(8, 2, batch_first=True)
    opt = ta.optim.SGD(mha.parameters(), lr=0.1)
    x = ta.randn(2, 3, 8)
    out, _ = mha(x, x, x)
    out.sum().backward()
    opt.step()
    out, _ = mha(x, x, x)
    opt.step()  # between the forward and its backward: the weights the forward saved have changed
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


VIEW_STEPS = [  # each works on any shape; torch returns a view for some and a copy for others
    lambda t: t.transpose(0, -1),
    lambda t: t.reshape(-1),
    lambda t: t.reshape(t.shape[-1], -1),
    lambda t: t.unsqueeze(0),
    lambda t: t[1:],
    lambda t: t.permute(*reversed(range(t.dim()))),
    lambda t: t.flatten(0, 1) if t.dim() > 1 else t.flatten(),
    lambda t: t.flatten(-1, -1),  # one dim to merge: torch returns t itself, no view
]


@pytest.mark.parametrize("seed", range(60))
def test_a_result_is_a_view_exactly_when_torchs_is(seed):
    """Reshaping a transposed tensor copies (in torch and in NumPy): the copy has its own memory and version
    counter, so an in-place change to it in the graph is allowed and its input's version does not move."""
    rng = np.random.default_rng(seed)
    first = [VIEW_STEPS[int(rng.choice([0, 5]))]] if rng.random() < 0.5 else []  # transposed first: more copies
    chain = first + [VIEW_STEPS[i] for i in rng.integers(len(VIEW_STEPS), size=int(rng.integers(1, 4)))]
    start = rng.standard_normal((2, 3, 4))
    results = []
    for lib in (ta, torch):
        x = lib.tensor(start, requires_grad=True)
        y = x * 1.5
        v = y
        for step in chain:
            v = step(v)
        is_view = v._base is not None
        upstream = lib.tensor(np.random.default_rng(seed).standard_normal(tuple(v.shape)))
        try:
            v.add_(upstream)
            (v * upstream).sum().backward()
            outcome = x.grad.numpy()
        except RuntimeError as err:
            outcome = str(err)
        with lib.no_grad():  # under no_grad an in-place change through a view changes its base
            b = lib.tensor(start)
            w = b
            for step in chain:
                w = step(w)
            w.add_(1.0)
        results.append((is_view, outcome, b.numpy().copy()))
    (ours_view, ours, ours_base), (torch_view, theirs, their_base) = results
    assert ours_view == torch_view
    np.testing.assert_array_equal(ours_base, their_base)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)  # (a view or not: the same gradient as torch's)


def test_merging_heads_copies_and_the_copy_is_not_a_view_as_torch():
    """MultiheadAttention's step 4, ``heads.transpose(1, 2).reshape(B, L, E)``: a copy in torch and here. As a view
    it would keep ``heads`` alive as long as the output projection keeps the copy for its backward."""
    start = np.random.default_rng(0).standard_normal((2, 3, 5, 4))  # (B, h, L, d_k)
    for lib in (ta, torch):
        heads = lib.tensor(start, requires_grad=True) * 2
        concat = heads.transpose(1, 2).reshape(2, 5, 12)
        assert concat._base is None, lib.__name__
        version = heads._version
        concat.mul_(3)  # in place on a copy in the graph: allowed, and heads is untouched
        assert heads._version == version
        np.testing.assert_allclose(np.asarray(heads.detach().numpy()), 2 * start)


@pytest.mark.parametrize("op", ["mul_", "add_", "sub_", "div_"])
def test_a_float32_view_changed_in_place_by_a_float64_value_stays_float32_as_torch(op):
    """The result is cast back to the view's float32 (torch's same-kind rule), and the float64 value still
    gets its float64 gradient, through the cast."""
    seen = []
    for lib in (ta, torch):
        x = lib.tensor(np.arange(1.0, 7.0).reshape(2, 3).astype(np.float32), requires_grad=True)
        w = lib.tensor(np.array([0.5, -1.5, 2.25]), requires_grad=True)  # float64
        y = x * 2
        getattr(y[1], op)(w)
        dy = lib.tensor(np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32))
        (y * y * dy).sum().backward()
        seen.append([(str(t.dtype).replace("torch.", ""), t.detach().numpy()) for t in (y, x.grad, w.grad)])
    for (dtype, ours), (torch_dtype, theirs) in zip(*seen):
        assert dtype == torch_dtype
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


@pytest.mark.parametrize("change_base", [lambda y: y.add_(1.0), lambda y: y[1].mul_(2.0)], ids=["base", "other_view"])
@pytest.mark.parametrize("make_base", [lambda x: x * 2, lambda x: ta.full((2, 3), 2.0) * x], ids=["x*2", "c*x"])
def test_a_view_whose_base_changed_since_it_was_made_is_refused_clearly(change_base, make_base):
    """torch rebuilds the stale view's history from its base; here the in-place change is refused, naming the op
    and the reason (not a misleading message, not a wrong gradient). Taken again, the view works as torch's.
    (The base's old history, behind the view, may start at a constant: c * x.)"""
    x = ta.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = make_base(x)
    v = y[0]
    change_base(y)
    with pytest.raises(RuntimeError, match=r"^mul_: the view's history no longer leads to its base"):
        v.mul_(3.0)
    grads = []
    for lib in (ta, torch):
        x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x * 2
        change_base(y)
        y[0].mul_(x[1])
        dy = lib.tensor(np.random.default_rng(8).standard_normal((2, 3)))
        (g,) = lib.autograd.grad((y * y * dy).sum(), x)
        grads.append(g.numpy())
    np.testing.assert_allclose(*grads, rtol=1e-12)


def _detached(lib, e):
    e.detach().add_(1.0)


def _view_in_graph(lib, e):
    e[0].mul_(2.0)


def _view_under_no_grad(lib, e):
    with lib.no_grad():
        e[:, 1:].mul_(2.0)


def _element_of_detached(lib, e):
    e.detach()[1, 2].add_(1.0)


@pytest.mark.parametrize("change", [_detached, _view_in_graph, _view_under_no_grad, _element_of_detached])
@pytest.mark.parametrize("make", [lambda t: t.exp(), lambda t: t.tanh(), lambda t: t.softmax(-1),
                                  lambda t: t.sqrt()], ids=["exp", "tanh", "softmax", "sqrt"])
def test_an_output_its_op_saved_changed_through_an_alias_is_refused_as_torch(make, change):
    """``exp`` (and tanh, softmax, sqrt) saves its output for backward; changed in place through anything sharing
    its memory (a view, detach(), under no_grad or not), the backward would read the new values: refused."""
    for lib in (ta, torch):
        a = lib.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
        e = make(a)
        change(lib, e)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            (e * e).sum().backward()


def test_data_is_an_alias_the_version_counter_does_not_see_as_torch():
    """``.data`` shares memory but not the version counter: torch lets the change through, and so does tinyattn
    (the gradient then reads the changed output, in both)."""
    grads = []
    for lib in (ta, torch):
        a = lib.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
        e = a.exp()
        e.data.add_(1.0)
        e.sum().backward()
        grads.append(a.grad.numpy())
    np.testing.assert_allclose(*grads, rtol=1e-12)


@pytest.mark.parametrize("refused", [lambda e: e.add_(ta.ones(4)), lambda e: e[0].add_(ta.ones(4)),
                                     lambda e: e.detach().add_(ta.ones(4))], ids=["itself", "view", "detached"])
def test_an_in_place_change_refused_before_writing_leaves_the_backward_intact(refused):
    """A change refused for its shape writes nothing: the op that saved its output still runs its backward."""
    a = ta.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    e = a.exp()
    with pytest.raises((ValueError, RuntimeError)):
        refused(e)
    (g,) = ta.autograd.grad((e * e).sum(), a)
    np.testing.assert_allclose(g.numpy(), 2 * np.exp(2 * a.detach().numpy()), rtol=1e-6)
