"""``torch.autograd.functional`` (vjp, jvp, jacobian, hessian, vhp, hvp) against torch's in float64: values,
the shapes of nested results, create_graph, strict, and the errors."""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

TOL = dict(rtol=1e-8, atol=1e-12)


def _scalar(lib):
    """One element out of two inputs: softmax attention of a against b, and a cubic term."""
    def f(a, b):
        return ((a @ b).softmax(-1) @ b.T * a).sum() + (a ** 3).sum()
    return f


def _pair(lib):
    """Two outputs of two inputs, one output independent of b."""
    def f(a, b):
        return (a * b.sum()).tanh(), a.exp().sum(0)
    return f


def _tensor(lib, data):
    return tuple(lib.tensor(d) for d in data) if isinstance(data, tuple) else lib.tensor(data)


def _numpy(result):
    if isinstance(result, tuple):
        return tuple(_numpy(r) for r in result)
    return result.detach().numpy()


def _assert_same(ours, theirs):
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same(a, b)
    else:
        assert not isinstance(ours, tuple) and ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, **TOL)


RNG = np.random.default_rng(7)
A, B = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 3))
VA, VB = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 3))
V_OUT = (RNG.standard_normal((2, 3)), RNG.standard_normal(3))

CALLS = {
    "vjp": lambda lib, AF: AF.vjp(_pair(lib), _tensor(lib, (A, B)), _tensor(lib, V_OUT)),
    "vjp_one_input": lambda lib, AF: AF.vjp(lambda a: a.exp() * a, _tensor(lib, A), _tensor(lib, VA)),
    "vjp_scalar_no_v": lambda lib, AF: AF.vjp(_scalar(lib), _tensor(lib, (A, B))),
    "jvp": lambda lib, AF: AF.jvp(_pair(lib), _tensor(lib, (A, B)), _tensor(lib, (VA, VB))),
    "jvp_one_input": lambda lib, AF: AF.jvp(lambda a: (a * a).sum(1), _tensor(lib, A), _tensor(lib, VA)),
    "jacobian": lambda lib, AF: AF.jacobian(_pair(lib), _tensor(lib, (A, B))),
    "jacobian_one_to_one": lambda lib, AF: AF.jacobian(lambda a: a.softmax(-1), _tensor(lib, A)),
    "jacobian_one_to_two": lambda lib, AF: AF.jacobian(lambda a: (a.sin(), a.sum()), _tensor(lib, A)),
    "hessian": lambda lib, AF: AF.hessian(_scalar(lib), _tensor(lib, (A, B))),
    "hessian_one_input": lambda lib, AF: AF.hessian(lambda a: (a.exp() * a.sin()).sum(), _tensor(lib, A)),
    "vhp": lambda lib, AF: AF.vhp(_scalar(lib), _tensor(lib, (A, B)), _tensor(lib, (VA, VB))),
    "hvp": lambda lib, AF: AF.hvp(_scalar(lib), _tensor(lib, (A, B)), _tensor(lib, (VA, VB))),
    "hvp_one_input": lambda lib, AF: AF.hvp(lambda a: (a.tanh() ** 2).sum(), _tensor(lib, A), _tensor(lib, VA)),
}


@pytest.mark.parametrize("name", CALLS)
def test_matches_torch(name):
    ours = CALLS[name](ta, ta.autograd.functional)
    theirs = CALLS[name](torch, torch.autograd.functional)
    _assert_same(_numpy(ours), _numpy(theirs))


@pytest.mark.parametrize("name", CALLS)
def test_results_are_detached_unless_create_graph(name):
    flat = []

    def walk(r):
        if isinstance(r, tuple):
            for x in r:
                walk(x)
        else:
            flat.append(r)

    walk(CALLS[name](ta, ta.autograd.functional))
    assert flat and not any(t.requires_grad for t in flat)


def test_create_graph_lets_a_result_be_differentiated_as_torch():
    """The Hessian-vector product's own gradient with respect to the point (a third derivative)."""
    results = []
    for lib in (ta, torch):
        a = lib.tensor(A, requires_grad=True)
        _, hv = lib.autograd.functional.hvp(lambda x: (x.sin() * x * x).sum(), a, lib.tensor(VA), create_graph=True)
        assert hv.requires_grad
        (third,) = lib.autograd.grad((hv * hv).sum(), a)
        results.append(third.numpy())
    np.testing.assert_allclose(*results, **TOL)


def test_strict_refuses_an_independent_input_as_torch():
    for lib in (ta, torch):
        AF = lib.autograd.functional
        with pytest.raises(RuntimeError, match="independent of input 1"):
            AF.vjp(lambda a, b: a * 2, _tensor(lib, (A, B)), lib.tensor(VA), strict=True)
        _, (_, zeros) = AF.vjp(lambda a, b: a * 2, _tensor(lib, (A, B)), lib.tensor(VA))
        np.testing.assert_array_equal(zeros.numpy(), np.zeros_like(B))
        with pytest.raises(RuntimeError, match="does not require gradients"):
            AF.jacobian(lambda a, lib=lib: lib.ones(2, dtype=lib.float64), lib.tensor(A), strict=True)


@pytest.mark.parametrize("call, error, message", [
    (lambda lib, AF: AF.vjp(lambda a: a * a, lib.tensor(A)), RuntimeError, "v can only be None"),
    (lambda lib, AF: AF.vjp(lambda a: a * a, lib.tensor(A), lib.tensor(VB)), RuntimeError, "invalid size"),
    (lambda lib, AF: AF.vjp(lambda a: a * a, [lib.tensor(A)]), TypeError, "must be either a Tensor or a tuple"),
    (lambda lib, AF: AF.vjp(lambda a: 3, lib.tensor(A)), TypeError, "outputs of the user-provided function"),
    (lambda lib, AF: AF.jvp(lambda a: a * a, lib.tensor(A)), RuntimeError, "v can only be None"),
    (lambda lib, AF: AF.hessian(lambda a: a * a, lib.tensor(A)), RuntimeError, "should contain a single element"),
    (lambda lib, AF: AF.hessian(lambda a: (a, a), lib.tensor(A)), RuntimeError, "should return a single Tensor"),
    (lambda lib, AF: AF.jacobian(lambda a: a, lib.tensor(A), strategy="forward-mode"), NotImplementedError,
     "only implemented for `vectorize=True`"),
])
def test_refusals_match_torch(call, error, message):
    for lib in (ta, torch):
        with pytest.raises(error, match=message):
            call(lib, lib.autograd.functional)


def test_an_unknown_strategy_is_a_value_error():
    """(torch raises a bare AssertionError here; the message is the same idea.)"""
    with pytest.raises(ValueError, match='"forward-mode" or "reverse-mode"'):
        ta.autograd.functional.jacobian(lambda a: a, ta.tensor(A), strategy="sideways")


# -- every function against torch: refusals word for word, float32, create_graph, strict, the defaults ---------

NAMES = ("vjp", "jvp", "jacobian", "hessian", "vhp", "hvp")
ONE_ELEMENT = ("hessian", "vhp", "hvp")  # (func returns one element)
TAKES_V = ("vjp", "jvp", "vhp", "hvp")


def _args(lib, name, func_kind="good", dtype=np.float64, v_kind="good"):
    """(func, inputs, v) for ``name``: two inputs ``a (2, 3)``, ``b (3,)``; ``func_kind`` picks how func behaves."""
    a, b = lib.tensor(A.astype(dtype)), lib.tensor(B[0].astype(dtype))
    one = name in ONE_ELEMENT
    funcs = {
        "good": lambda x, y: (x.sin() * y).sum() * (x * y).cos().sum() if one else (x.sin() * y, (x * y).exp().sum(0)),
        "independent": lambda x, y: (x.sin() * x).sum() if one else x.sin(),  # (nothing depends on y)
        "linear": lambda x, y: (x * 2).sum() + y.sum() if one else x * 2 + y,  # (a Jacobian with no graph)
        "quadratic": lambda x, y: (x * x).sum() + (y * y).sum() if one else x * x + y * y,  # (a Hessian with none)
        "constant": lambda x, y: lib.ones((), dtype=x.dtype) if one else lib.ones(2, 3, dtype=x.dtype),
        "int": lambda x, y: 3,
        "one_tuple": lambda x, y: ((x.sin() * y).sum(),),
        "two_elements": lambda x, y: (x.sin() * y).sum(0)[:2],
    }
    func = funcs[func_kind]
    rng = np.random.default_rng(11)
    if name == "vjp" and func_kind == "int":  # (no outputs to shape v after: vjp refuses the int first)
        vs = None
    elif name == "vjp":  # v shaped as the outputs
        outs = func(a, b)
        shapes = [o.shape for o in outs] if isinstance(outs, tuple) else [outs.shape]
        vs = tuple(lib.tensor(rng.standard_normal(tuple(s)).astype(dtype)) for s in shapes) \
            if isinstance(outs, tuple) else lib.tensor(rng.standard_normal(tuple(shapes[0])).astype(dtype))
    else:  # shaped as the inputs
        vs = (lib.tensor(VA.astype(dtype)), lib.tensor(VB[0].astype(dtype)))
    vs = {"good": vs, "none": None, "list": [lib.tensor(VA)], "too_many": (lib.tensor(VA),) * 3,
          "wrong_size": (lib.tensor(VB[0]), lib.tensor(VB[0])) if name != "vjp" else lib.tensor(VB[0])}[v_kind]
    return func, (a, b), vs


def _call(lib, name, func_kind="good", dtype=np.float64, v_kind="good", inputs_kind="tuple", **options):
    func, inputs, v = _args(lib, name, func_kind, dtype, v_kind)
    inputs = {"tuple": inputs, "list": list(inputs), "non_tensor": (inputs[0], 1.0)}[inputs_kind]
    f = getattr(lib.autograd.functional, name)
    return f(func, inputs, v, **options) if name in TAKES_V else f(func, inputs, **options)


REFUSALS = [
    dict(inputs_kind="list"), dict(inputs_kind="non_tensor"), dict(func_kind="int"),
    dict(func_kind="independent", strict=True), dict(func_kind="constant", strict=True),
    dict(func_kind="linear", strict=True), dict(func_kind="linear", strict=True, create_graph=True),
    dict(func_kind="independent", strict=True, create_graph=True),
    dict(func_kind="quadratic", strict=True), dict(func_kind="quadratic", strict=True, create_graph=True),
]
V_REFUSALS = [dict(v_kind="list"), dict(v_kind="too_many"), dict(v_kind="wrong_size"), dict(v_kind="none")]
ONE_ELEMENT_REFUSALS = [dict(func_kind="one_tuple"), dict(func_kind="two_elements")]


def _outcome(lib, name, case):
    """What the call does: ("raised", type name, message) or ("returned",)."""
    try:
        _call(lib, name, **case)
    except Exception as e:  # noqa: BLE001  (any refusal is compared with torch's)
        return "raised", type(e).__name__, str(e)
    return ("returned",)


CASES = [(name, case) for name in NAMES for case in REFUSALS] + \
    [(name, case) for name in TAKES_V for case in V_REFUSALS] + \
    [(name, case) for name in ONE_ELEMENT for case in ONE_ELEMENT_REFUSALS] + \
    [("jacobian", dict(vectorize=True, strict=True)), ("hessian", dict(vectorize=True, strict=True)),
     ("hessian", dict(vectorize=True, outer_jacobian_strategy="forward-mode"))]


@pytest.mark.parametrize("name, case", CASES, ids=[f"{n}-{c}" for n, c in CASES])
def test_each_refusal_is_torchs_in_type_and_message(name, case):
    """The same bad call refused (or accepted) by both, with the same exception type and message: which
    argument, which function, which input or output index, which strict-mode stage."""
    ours, theirs = _outcome(ta, name, case), _outcome(torch, name, case)
    assert ours == theirs


@pytest.mark.parametrize("name", TAKES_V)
def test_a_wrong_v_for_one_input_is_refused_in_torchs_words(name):
    """One Tensor in (no tuple): the message names no entry, as torch's."""
    def outcome(lib):
        x = lib.tensor(A)
        try:
            getattr(lib.autograd.functional, name)(lambda t: t.sin().sum() if name in ONE_ELEMENT else t.sin(), x,
                                                   lib.tensor(B[0]))
        except RuntimeError as e:
            return str(e)
        return None
    ours = outcome(ta)
    assert ours is not None and ours == outcome(torch)


def _flat(result):
    return [x for r in result for x in _flat(r)] if isinstance(result, tuple) else [result]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("func_kind", ["good", "independent"])
def test_float32_results_keep_float32_as_torch(name, func_kind):
    """Every result (the zeros for an input nothing depends on too) in the inputs' float32, with torch's values."""
    ours, theirs = _flat(_call(ta, name, func_kind, np.float32)), _flat(_call(torch, name, func_kind, np.float32))
    assert [str(t.dtype) for t in ours] == [str(t.dtype).replace("torch.", "") for t in theirs]
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=2e-5, atol=2e-6)


def test_one_element_results_without_v_keep_float32_as_torch():
    for lib in (ta, torch):
        a = lib.tensor(A.astype(np.float32))
        AF = lib.autograd.functional
        for out in (AF.vjp(lambda x: (x * x).sum(), a)[1], AF.jacobian(lambda x: x[:0].sum(0), a),
                    AF.jvp(lambda s: s * s, a[0, :1], None)[1]):
            assert str(out.dtype).endswith("float32")


def test_the_jacobian_of_an_empty_output_is_empty():
    """(torch's stack refuses the empty list of rows; the Jacobian of no elements has none: shape (0, 3, 2, 3).)"""
    a = ta.tensor(A.astype(np.float32))
    jac = ta.autograd.functional.jacobian(lambda x: x[:0] * 2, a)
    assert jac.shape == (0, 3, 2, 3) and jac.dtype == ta.float32


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("func_kind", ["good", "independent"])
def test_create_graph_results_differentiate_as_torch(name, func_kind):
    """With create_graph=True and inputs that require grad, each result carries a graph back to those very inputs
    (not to copies): a random weighting of the results has torch's gradient."""
    seen = []
    for lib in (ta, torch):
        a = lib.tensor(A, requires_grad=True)
        b = lib.tensor(B[0], requires_grad=True)
        func, _, v = _args(lib, name, func_kind)
        f = getattr(lib.autograd.functional, name)
        result = _flat(f(func, (a, b), v, create_graph=True) if name in TAKES_V else f(func, (a, b),
                                                                                       create_graph=True))
        weights = np.random.default_rng(5)
        loss = sum((r * lib.tensor(weights.standard_normal(tuple(r.shape)))).sum() for r in result if r.requires_grad)
        grads = lib.autograd.grad(loss, (a, b), allow_unused=True, materialize_grads=True)
        seen.append(([r.requires_grad for r in result], [g.detach().numpy() for g in grads]))
    (flags, ours), (torch_flags, theirs) = seen
    assert flags == torch_flags
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, **TOL)


@pytest.mark.parametrize("name", NAMES)
def test_strict_accepts_what_depends_on_every_input_as_torch(name):
    _assert_same(_numpy(_call(ta, name, strict=True)), _numpy(_call(torch, name, strict=True)))


@pytest.mark.parametrize("name", NAMES)
def test_by_default_an_independent_input_gets_zeros_as_torch(name):
    """strict is off unless asked: a function linear in, or independent of, an input is no error."""
    for kind in ("independent", "linear"):
        _assert_same(_numpy(_call(ta, name, kind)), _numpy(_call(torch, name, kind)))


def test_hessian_forward_mode_needs_vectorize_as_torch():
    for lib in (ta, torch):
        with pytest.raises(NotImplementedError, match="vectorize=True"):
            lib.autograd.functional.hessian(lambda x: (x ** 3).sum(), lib.tensor(A),
                                            outer_jacobian_strategy="forward-mode")
