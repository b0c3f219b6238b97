"""``import tinyattn as torch``: every name tutorials use resolves, and behaves as torch documents it.

These run without torch; ``test_namespace_torch.py`` compares the same functions with torch's numbers.
"""

import math
import subprocess
import sys

import numpy as np
import pytest

import tinyattn as torch  # the point of this file: code written for torch
from tinyattn.autograd import gradcheck

# Every torch.X the namespace issue lists, reached as a tutorial reaches it.
NAMES = """
nn nn.functional nn.init optim autograd autograd.grad autograd.backward utils utils.data cuda cuda.is_available
cuda.device_count backends backends.mps backends.mps.is_available accelerator accelerator.is_available
nn.attention nn.attention.sdpa_kernel nn.attention.SDPBackend
float float32 double float64 half float16 long int64 int int32 uint8 bool inf nan pi e finfo iinfo
get_default_dtype set_default_dtype bfloat16
device set_default_device get_default_device
zeros ones full empty eye arange linspace rand randn randint randperm normal zeros_like ones_like full_like
empty_like rand_like randn_like randint_like from_numpy as_tensor tensor manual_seed Generator
tril triu sin cos clamp clip pow bmm mm dot outer einsum norm gather argmax argmin topk sort multinomial
repeat_interleave flip unbind allclose isclose logical_not logical_and logical_or logical_xor
softmax log_softmax exp log tanh sigmoid relu sqrt abs matmul sum mean max min var std amax amin reshape
transpose permute unsqueeze squeeze flatten cat stack split chunk where masked_fill is_tensor numel t
no_grad enable_grad set_grad_enabled is_grad_enabled inference_mode
""".split()
METHODS = """
t T mT bool long float int half double type to cpu cuda device contiguous clone view view_as expand_as size dim
numel logical_not sin cos clamp pow tril triu gather norm argmax argmin topk sort repeat repeat_interleave flip
unbind allclose isclose item tolist numpy detach __format__ __index__ __len__ __iter__ __invert__ __and__ __or__
""".split()


def resolve(root, dotted):
    for part in dotted.split("."):
        root = getattr(root, part)
    return root


@pytest.mark.parametrize("name", NAMES)
def test_every_listed_name_resolves(name):
    assert resolve(torch, name) is not None


@pytest.mark.parametrize("name", METHODS)
def test_every_listed_method_exists(name):
    assert hasattr(torch.Tensor, name)


def test_the_submodules_import_as_torch_code_imports_them():
    code = ("import tinyattn as torch\nimport tinyattn.nn as nn\nimport tinyattn.nn.functional as F\n"
            "from tinyattn.nn.attention import SDPBackend, sdpa_kernel\nfrom tinyattn import optim\n"
            "import tinyattn.utils.data\nprint(torch.nn is nn, F is nn.functional, torch.optim is optim)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True", "True"]


def test_utils_data_has_the_loader():
    assert torch.utils.data.DataLoader and torch.utils.data.TensorDataset and torch.utils.data.Dataset


# -- dtypes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,expected", [
    ("float", np.float32), ("float32", np.float32), ("double", np.float64), ("float64", np.float64),
    ("half", np.float16), ("float16", np.float16), ("long", np.int64), ("int64", np.int64), ("int", np.int32),
    ("int32", np.int32), ("uint8", np.uint8), ("bool", np.bool_),
])
def test_dtype_names_are_torchs_and_every_factory_takes_them(name, expected):
    dtype = getattr(torch, name)
    for make in (lambda: torch.zeros(2, 3, dtype=dtype), lambda: torch.ones(2, 3, dtype=dtype),
                 lambda: torch.empty(2, 3, dtype=dtype), lambda: torch.full((2, 3), 1, dtype=dtype),
                 lambda: torch.tensor([[1, 0, 1], [0, 1, 1]], dtype=dtype), lambda: torch.eye(2, 3, dtype=dtype),
                 lambda: torch.arange(6, dtype=dtype).reshape(2, 3),
                 lambda: torch.zeros_like(torch.ones(2, 3), dtype=dtype)):
        t = make()
        assert t.dtype == expected and t.shape == (2, 3)
    assert torch.ones(2, dtype=dtype).dtype == dtype  # a tensor's dtype compares equal to the name


def test_constants_are_torchs():
    assert torch.inf == math.inf and math.isnan(torch.nan) and torch.pi == math.pi and torch.e == math.e
    x = torch.tensor([1.0, 2.0]).masked_fill(torch.tensor([True, False]), -torch.inf)
    assert x.tolist() == [-math.inf, 2.0]


def test_finfo_and_iinfo():
    assert torch.finfo(torch.float32).eps == np.finfo(np.float32).eps
    assert torch.finfo().max == np.finfo(np.float32).max  # the default dtype
    assert torch.iinfo(torch.long).max == 2**63 - 1
    with pytest.raises(TypeError, match="use iinfo"):
        torch.finfo(torch.long)
    with pytest.raises(TypeError, match="use finfo"):
        torch.iinfo(torch.float)


def test_bfloat16_can_be_named_but_not_used():
    dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32  # (nanoGPT's choice)
    assert torch.zeros(1, dtype=dtype).dtype == np.float32
    for make in (lambda: torch.zeros(2, dtype=torch.bfloat16), lambda: torch.tensor([1.0], dtype=torch.bfloat16),
                 lambda: torch.ones(1).to(torch.bfloat16)):
        with pytest.raises(TypeError, match="bfloat16 is not supported: NumPy has no bfloat16"):
            make()


def test_a_dtype_numpy_lacks_names_itself_and_its_reason():
    """Each such name (bfloat16, complex64...) is an ``UnsupportedDtype``: made anew, it refuses with its reason."""
    from tinyattn.autograd.core.dtypes import UnsupportedDtype

    float8 = UnsupportedDtype("float8_e4m3fn", "NumPy has no float8")
    assert repr(float8) == "tinyattn.float8_e4m3fn"
    for make in (lambda: torch.zeros(2, dtype=float8), lambda: torch.ones(2).to(float8)):
        with pytest.raises(TypeError, match="float8_e4m3fn is not supported: NumPy has no float8"):
            make()


def test_set_default_dtype_changes_what_python_floats_become():
    assert torch.get_default_dtype() == np.float32
    try:
        torch.set_default_dtype(torch.float64)
        assert torch.get_default_dtype() == np.float64
        assert torch.tensor([1.5]).dtype == np.float64 and torch.zeros(2).dtype == np.float64
        assert torch.randn(2).dtype == np.float64 and torch.arange(0.0, 1.0, 0.5).dtype == np.float64
        assert (torch.tensor([1, 2]) / 2).dtype == np.float64  # int / int promotes to the default float
        assert torch.nn.Linear(2, 2).weight.dtype == np.float64
        assert (torch.tensor(np.ones(2, np.float32)) * 2.0).dtype == np.float32  # a scalar never widens
        with pytest.raises(TypeError, match="only floating-point types"):
            torch.set_default_dtype(torch.long)
    finally:
        torch.set_default_dtype(torch.float32)
    assert torch.tensor([1.5]).dtype == np.float32


def test_int_and_bool_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="only floating point tensors can require gradients"):
        torch.zeros(2, dtype=torch.long, requires_grad=True)


# -- devices ----------------------------------------------------------------------------------------


def test_device_agnostic_code_takes_the_cpu_path():
    device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    assert device == "cpu" and not torch.accelerator.is_available() and torch.cuda.device_count() == 0
    device = torch.device(device)
    x = torch.randn(2, 3, device=device)
    assert x.device == device == torch.device("cpu") and str(x.device) == "cpu"
    assert x.to(device) is x and x.cpu() is x and x.to("cpu", torch.float64).dtype == np.float64
    model = torch.nn.Linear(3, 2, device=device).to(device)
    assert model(x).device.type == "cpu"


def test_devices_are_torchs_values():
    assert repr(torch.device("cuda:1")) == "device(type='cuda', index=1)"
    assert torch.device("cuda", 1) == torch.device("cuda:1") != torch.device("cuda")
    assert torch.device(torch.device("cpu")) == torch.device("cpu")
    assert len({torch.device("cpu"), torch.device("cpu")}) == 1
    with pytest.raises(RuntimeError, match="expected one of cpu, cuda"):
        torch.device("gpu")


@pytest.mark.parametrize("attempt", [
    lambda: torch.zeros(2, device="cuda"), lambda: torch.ones(2).cuda(), lambda: torch.ones(2).to("cuda"),
    lambda: torch.ones(2).to(torch.device("cuda", 0)), lambda: torch.tensor([1.0], device="cuda:0"),
    lambda: torch.nn.Linear(2, 2, device="cuda"), lambda: torch.nn.Linear(2, 2).to("cuda"),
    lambda: torch.nn.Linear(2, 2).cuda(), lambda: torch.randn(2, device="mps"),
    lambda: torch.nn.MultiheadAttention(4, 2, device="cuda"), lambda: torch.set_default_device("cuda"),
])
def test_moving_to_a_gpu_raises_as_a_cpu_only_torch(attempt):
    with pytest.raises(RuntimeError, match="is not available: tinyattn runs on the CPU only"):
        attempt()


def test_module_to_casts_float_parameters_and_their_gradients():
    model = torch.nn.Linear(3, 2)
    model(torch.ones(1, 3)).sum().backward()
    model.to(torch.float64)
    assert model.weight.dtype == np.float64 and model.weight.grad.dtype == np.float64
    model.to(torch.ones(1, dtype=torch.float32))  # to(tensor): its dtype
    assert model.bias.dtype == np.float32
    with pytest.raises(TypeError, match="only floating point dtypes"):
        model.to(torch.long)


# -- factories and random functions -----------------------------------------------------------------


def test_factories_follow_torch():
    assert torch.arange(5).dtype == np.int64 and torch.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert torch.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert torch.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert torch.full((2,), 7).dtype == np.int64 and torch.full((2,), 0.5).dtype == np.float32
    assert torch.full((2,), True).dtype == np.bool_
    assert torch.ones_like(torch.zeros(2, dtype=torch.long)).tolist() == [1, 1]
    assert torch.full_like(torch.zeros(2), 3.0).tolist() == [3.0, 3.0]
    a = np.arange(3.0)
    t = torch.from_numpy(a)
    a[0] = 9  # shares memory, as torch
    assert t.tolist() == [9.0, 1.0, 2.0] and t.dtype == np.float64
    assert torch.as_tensor(a).array is a and torch.as_tensor(a, dtype=torch.float32).dtype == np.float32
    assert torch.zeros(2, requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="negative size"):
        torch.zeros(-1)


def test_random_functions_follow_manual_seed_and_generators():
    def draw():
        return [torch.randn(3).tolist(), torch.rand(2).tolist(), torch.randint(0, 10, (4,)).tolist(),
                torch.randperm(5).tolist(), torch.normal(0.0, 1.0, (2,)).tolist(),
                torch.multinomial(torch.tensor([0.1, 0.5, 0.4]), 2).tolist()]

    torch.manual_seed(7)
    first = draw()
    torch.manual_seed(7)
    assert draw() == first
    g = torch.Generator().manual_seed(3)
    mine = torch.randn(4, generator=g).tolist()
    torch.manual_seed(0)  # the default generator does not touch g's stream
    assert torch.randn(4, generator=torch.Generator().manual_seed(3)).tolist() == mine
    assert g.initial_seed() == 3 and torch.manual_seed(11).initial_seed() == torch.initial_seed() == 11


def test_random_functions_draw_from_the_right_distributions():
    torch.manual_seed(0)
    ints = torch.randint(3, 8, (20000,))
    assert ints.dtype == np.int64 and set(ints.tolist()) == set(range(3, 8))
    assert torch.randint(5, (3, 2)).shape == (3, 2)  # randint(high, size)
    assert sorted(torch.randperm(50).tolist()) == list(range(50))
    samples = torch.multinomial(torch.tensor([[1.0, 3.0, 0.0]]), 20000, replacement=True)
    assert samples.shape == (1, 20000) and abs((samples == 1).float().mean().item() - 0.75) < 0.02
    assert 2 not in samples.tolist()[0]  # a zero weight is never drawn
    no_repeat = torch.multinomial(torch.ones(4, 6), 6)
    assert all(sorted(row) == list(range(6)) for row in no_repeat.tolist())
    with pytest.raises(RuntimeError, match="without replacement"):
        torch.multinomial(torch.tensor([1.0, 0.0]), 2)
    normal = torch.normal(torch.full((20000,), 2.0), torch.full((20000,), 0.5))
    assert abs(normal.mean().item() - 2.0) < 0.02 and abs(normal.std().item() - 0.5) < 0.02


# -- methods ---------------------------------------------------------------------------------------


def test_python_protocols():
    loss = torch.tensor(0.123456)
    assert f"{loss:.4f}" == "0.1235" and f"{torch.tensor(3):d}" == "3"
    assert list(range(torch.tensor(3))) == [0, 1, 2] and [10, 20, 30][torch.tensor(1)] == 20
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1, 2][torch.tensor(1.0)]
    rows = list(torch.arange(6).reshape(3, 2))
    assert [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]] and len(torch.zeros(4, 2)) == 4
    assert int(torch.tensor(2.7)) == 2 and float(torch.tensor(2)) == 2.0


def test_conversions():
    x = torch.tensor([0.0, 1.5, -2.0])
    assert x.bool().tolist() == [False, True, True] and x.long().tolist() == [0, 1, -2]
    assert x.int().dtype == np.int32 and x.half().dtype == np.float16 and x.double().dtype == np.float64
    assert x.type() == "torch.FloatTensor" and x.type(torch.long).dtype == np.int64
    assert x.type("torch.DoubleTensor").dtype == np.float64
    m = torch.tensor([True, False])
    assert (~m).tolist() == [False, True] and m.logical_not().tolist() == [False, True]
    assert (m & torch.tensor([True, True])).tolist() == [True, False] and (m | ~m).tolist() == [True, True]
    with pytest.raises(TypeError, match="not supported for floating-point tensors"):
        ~x  # noqa: B018


def test_shape_methods():
    x = torch.randn(2, 3, 4)
    assert x.size() == (2, 3, 4) and x.size(-1) == 4 and x.dim() == 3 and x.numel() == 24
    assert x.mT.shape == (2, 4, 3) and torch.randn(2, 3).t().shape == (3, 2) and torch.randn(3).t().shape == (3,)
    assert x.view_as(torch.zeros(6, 4)).shape == (6, 4) and torch.ones(1, 4).expand_as(x[0]).shape == (3, 4)
    with pytest.raises(RuntimeError, match="expects a tensor with <= 2 dimensions"):
        x.t()


def test_clone_copies_and_stays_in_the_graph():
    x = torch.randn(3, requires_grad=True)
    y = x.clone()
    assert y.array is not x.array and y.grad_fn is not None
    y.backward(np.array([1.0, 2.0, 3.0], np.float32))
    assert x.grad.tolist() == [1.0, 2.0, 3.0]


# -- the new differentiable functions: each checked against finite differences -----------------------


def f64(*shape, seed=0, positive=False):
    data = np.random.default_rng(seed).standard_normal(shape)
    return torch.tensor(np.abs(data) + 0.5 if positive else data, requires_grad=True)


GRADCHECKS = {
    "sin": (lambda x: torch.sin(x), [f64(3, 4)]),
    "cos": (lambda x: torch.cos(x), [f64(3, 4)]),
    "clamp": (lambda x: torch.clamp(x, -0.5, 0.7), [f64(4, 5)]),
    "clamp_min": (lambda x: x.clamp(min=0.1), [f64(4, 5)]),
    "tril": (lambda x: torch.tril(x, -1), [f64(2, 4, 3)]),
    "triu": (lambda x: torch.triu(x, 1), [f64(3, 5)]),
    "gather": (lambda x: torch.gather(x, 1, torch.tensor([[0, 0, 2], [1, 2, 2]])), [f64(2, 3)]),
    "norm": (lambda x: torch.norm(x, dim=1), [f64(3, 4)]),
    "norm_p3": (lambda x: x.norm(p=3), [f64(5, seed=1)]),
    "norm_inf": (lambda x: x.norm(p=math.inf, dim=0), [f64(4, 3, seed=2)]),
    "einsum": (lambda a, b: torch.einsum("bij,bjk->bik", a, b), [f64(2, 3, 4), f64(2, 4, 5, seed=1)]),
    "einsum_sum": (lambda a, b: torch.einsum("ij,k->ik", a, b), [f64(2, 3), f64(4, seed=1)]),
    "einsum_ellipsis": (lambda a, b: torch.einsum("...ij,jk", a, b), [f64(2, 1, 3, 4), f64(4, 2, seed=1)]),
    "einsum_broadcast": (lambda a, b: torch.einsum("...ij,...jk->...ik", a, b), [f64(1, 3, 4), f64(2, 4, 2)]),
    "bmm": (lambda a, b: torch.bmm(a, b), [f64(2, 3, 4), f64(2, 4, 2, seed=1)]),
    "mm": (lambda a, b: torch.mm(a, b), [f64(3, 4), f64(4, 2, seed=1)]),
    "dot": (lambda a, b: torch.dot(a, b), [f64(4), f64(4, seed=1)]),
    "outer": (lambda a, b: torch.outer(a, b), [f64(3), f64(4, seed=1)]),
    "topk": (lambda x: torch.topk(x, 2, dim=1).values, [f64(3, 5)]),
    "sort": (lambda x: torch.sort(x, dim=0, descending=True).values, [f64(4, 3)]),
    "repeat": (lambda x: x.repeat(2, 1, 3), [f64(2, 3)]),
    "repeat_interleave": (lambda x: torch.repeat_interleave(x, 2, dim=1), [f64(2, 3)]),
    "repeat_interleave_counts": (lambda x: x.repeat_interleave(torch.tensor([1, 0, 3]), dim=0), [f64(3, 2)]),
    "flip": (lambda x: torch.flip(x, (0, 2)), [f64(2, 3, 4)]),
    "unbind": (lambda x: torch.stack([u * (i + 1) for i, u in enumerate(torch.unbind(x, 1))]), [f64(2, 3)]),
    "pow": (lambda x: torch.pow(x, 2.5), [f64(3, positive=True)]),
    "square": (lambda x: torch.square(x), [f64(3)]),
    "clone": (lambda x: torch.clone(x) * 2, [f64(3)]),
}


@pytest.mark.parametrize("name", GRADCHECKS)
def test_new_function_passes_gradcheck(name):
    fn, inputs = GRADCHECKS[name]
    assert gradcheck(fn, inputs)


def test_to_a_float_dtype_is_differentiable_and_to_an_int_leaves_the_graph():
    x = torch.tensor([0.5, 1.5, 2.5], dtype=torch.float64, requires_grad=True)
    y = x.to("cpu", torch.float32)
    assert y.dtype == np.float32 and y.grad_fn is not None and x.long().grad_fn is None
    upstream = np.array([1.0, -2.0, 3.0], np.float32)
    y.backward(upstream)
    assert x.grad.dtype == np.float64 and x.grad.tolist() == upstream.tolist()


def test_gather_accumulates_a_picked_twice_gradient():
    x = torch.zeros(3, requires_grad=True)
    torch.gather(x, 0, torch.tensor([2, 2, 0])).backward(np.array([1.0, 10.0, 100.0], np.float32))
    assert x.grad.tolist() == [100.0, 0.0, 11.0]


def test_norm_of_zeros_has_a_zero_gradient_not_nan():
    x = torch.zeros(2, 3, requires_grad=True)
    x.norm(dim=1).sum().backward()
    assert x.grad.tolist() == [[0.0] * 3] * 2


def test_clamp_passes_the_gradient_at_its_ends_as_torch():
    x = torch.tensor([-1.0, 0.0, 0.5, 1.0, 2.0], requires_grad=True)
    x.clamp(0.0, 1.0).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("call,error,match", [
    (lambda: torch.tril(torch.ones(3)), RuntimeError, "at least 2 dimensions"),
    (lambda: torch.gather(torch.ones(2, 3), 1, torch.tensor([[0.0]])), RuntimeError, "int64 index"),
    (lambda: torch.gather(torch.ones(2, 3), 1, torch.tensor([[3]])), RuntimeError, "index 3 is out of bounds for dim"),
    (lambda: torch.gather(torch.ones(2, 3), 1, torch.tensor([[-1]])), RuntimeError, "index -1 is out of bounds"),
    (lambda: torch.gather(torch.ones(2, 3), 1, torch.tensor([0])), RuntimeError, "same number of dims"),
    (lambda: torch.einsum("ij,jk->ik", torch.ones(2, 3), torch.ones(4, 2)), ValueError, "has sizes 3 and 4"),
    (lambda: torch.einsum("ii->i", torch.ones(2, 2)), NotImplementedError, "repeated index"),
    (lambda: torch.einsum("ij->i", torch.ones(2)), ValueError, "do not fit an operand of shape \\(2,\\)"),
    (lambda: torch.bmm(torch.ones(2, 3), torch.ones(3, 2)), RuntimeError, "3-D tensors"),
    (lambda: torch.dot(torch.ones(2), torch.ones(3)), RuntimeError, "1-D tensors of the same size"),
    (lambda: torch.topk(torch.ones(3), 4), RuntimeError, "out of range"),
    (lambda: torch.clamp(torch.ones(2)), ValueError, "at least one of min and max"),
    (lambda: torch.norm(torch.ones(2, dtype=torch.long)), RuntimeError, "floating point"),
    (lambda: torch.norm(torch.ones(2, 2), p="nuc"), NotImplementedError, "matrix norm"),
    (lambda: torch.exp([1.0]), TypeError, "argument 'input' \\(position 1\\) must be Tensor"),
    (lambda: torch.ones(2, 3).repeat(2), RuntimeError, "can not be smaller"),
    (lambda: torch.flip(torch.ones(2, 3), (1, -1)), RuntimeError, "name a dim more than once"),
])
def test_bad_calls_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_sdpa_kernel_runs_the_one_implementation():
    from tinyattn.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(1, 2, 4, 8)
    expected = torch.nn.functional.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        assert np.array_equal(torch.nn.functional.scaled_dot_product_attention(q, q, q).array, expected.array)
    with pytest.raises(TypeError, match="SDPBackend"):
        with sdpa_kernel("flash"):
            pass


def test_set_grad_enabled_is_a_call_and_a_block():
    with torch.set_grad_enabled(False):
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    try:
        assert not torch.is_grad_enabled()
    finally:
        torch.set_grad_enabled(True)
    with torch.inference_mode():
        assert (torch.ones(1, requires_grad=True) * 2).grad_fn is None


# -- what mutation testing showed no test guarded ------------------------------------------------------


@pytest.mark.parametrize("name,call", [
    ("zeros", lambda: torch.zeros(2, device="cuda")), ("ones", lambda: torch.ones(2, device="cuda")),
    ("empty", lambda: torch.empty(2, device="cuda")), ("full", lambda: torch.full((2,), 1.0, device="cuda")),
    ("eye", lambda: torch.eye(2, device="cuda")), ("arange", lambda: torch.arange(3, device="cuda")),
    ("linspace", lambda: torch.linspace(0, 1, 3, device="cuda")), ("rand", lambda: torch.rand(2, device="cuda")),
    ("randn", lambda: torch.randn(2, device="cuda")), ("randint", lambda: torch.randint(0, 3, (2,), device="cuda")),
    ("randperm", lambda: torch.randperm(3, device="cuda")), ("tensor", lambda: torch.tensor([1.0], device="cuda")),
    ("as_tensor", lambda: torch.as_tensor([1.0], device="cuda")), ("Generator", lambda: torch.Generator("cuda")),
    ("set_default_device", lambda: torch.set_default_device("cuda")), ("to", lambda: torch.ones(1).to("cuda")),
    ("device", lambda: torch.nn.Linear(1, 1, device="cuda")), ("cuda", lambda: torch.ones(1).cuda()),
    ("zeros", lambda: torch.zeros(2, device=0)),  # a bare int is a CUDA ordinal, as torch reads it
])
def test_a_gpu_refusal_names_the_call(name, call):
    with pytest.raises(RuntimeError, match=rf"^{name}: device 'cuda(:0)?' is not available"):
        call()


def test_devices_parse_as_torch():
    assert torch.device(torch.device("cuda", 1)).index == 1
    assert torch.device(torch.device("cuda:1"), 2).index == 2  # an explicit index wins
    assert str(torch.device("cuda", 3)) == "cuda:3" and str(torch.device("cpu")) == "cpu"
    assert hash(torch.device("cuda:1")) == hash(torch.device("cuda", 1)) != hash(torch.device("cuda:2"))
    assert torch.device("cpu") != "cpu" and torch.device("meta").type == "meta"
    for bad in ("cuda:x", "cuda:-1"):
        with pytest.raises(RuntimeError, match="invalid device string"):
            torch.device(bad)
    with pytest.raises(RuntimeError, match="invalid device string"):
        torch.device("cuda:1", 1)
    for index in (-1, 1.5):
        with pytest.raises(RuntimeError, match="the index must be a non-negative int"):
            torch.device("cuda", index)
    with pytest.raises(TypeError, match="expected a string"):
        torch.device(3.0)
    with pytest.raises(NotImplementedError, match="meta device"):
        torch.zeros(2, device="meta")
    torch.set_default_device("cpu")
    assert torch.get_default_device() == torch.device("cpu")
    assert torch.ones(1).is_cuda is False and torch.ones(1).to(device=torch.device("cpu")).device.type == "cpu"


def test_generators_and_seeds():
    g, h = torch.Generator(), torch.Generator()
    assert 0 <= g.initial_seed() < 2**63 and g.initial_seed() != h.initial_seed()  # fresh entropy, each
    first = torch.randn(3, generator=g).tolist()
    assert torch.randn(3, generator=torch.Generator().manual_seed(g.initial_seed())).tolist() == first
    new = g.seed()
    assert new == g.initial_seed() and 0 <= new < 2**63
    again = torch.randn(3, generator=g).tolist()
    assert torch.randn(3, generator=torch.Generator().manual_seed(new)).tolist() == again
    s = torch.seed()
    assert torch.initial_seed() == s and 0 <= s < 2**63
    drawn = torch.rand(2).tolist()
    torch.manual_seed(s)
    assert torch.rand(2).tolist() == drawn
    with pytest.raises(TypeError, match="seed must be an int"):
        torch.manual_seed(True)
    with pytest.raises(TypeError, match="seed must be an int"):
        torch.manual_seed(1.5)
    with pytest.raises(TypeError, match="generator must be a tinyattn Generator"):
        torch.randn(2, generator=0)
    assert torch.rand(2, generator=np.random.default_rng(1)).tolist() == torch.rand(2, generator=np.random.default_rng(
        1)).tolist()


def test_as_tensor_shares_or_casts():
    t = torch.ones(2)
    assert torch.as_tensor(t) is t and torch.as_tensor(t, dtype=torch.float64).dtype == np.float64
    assert torch.as_tensor(t, dtype=torch.float32) is t
    a = np.zeros(2, np.float32)
    shared = torch.as_tensor(a, dtype=torch.float32)
    a[0] = 5
    assert shared.tolist() == [5.0, 0.0]
    with pytest.raises(TypeError, match="from_numpy: expected np.ndarray"):
        torch.from_numpy([1.0])
    with pytest.raises(TypeError, match="can't convert an array of dtype"):
        torch.from_numpy(np.array(["a"]))


def test_unsupported_dtypes_name_themselves():
    assert repr(torch.bfloat16) == "tinyattn.bfloat16" and torch.complex64.name == "complex64"
    with pytest.raises(TypeError, match="complex128 is not supported: tinyattn has no complex tensors"):
        torch.zeros(1, dtype=torch.complex128)
    with pytest.raises(TypeError, match="numbers and booleans only"):
        torch.zeros(1, dtype=np.dtype("U1"))


def test_all_and_any_take_numpys_names_as_np_all_passes_them():
    m = torch.tensor([[True, False], [True, True]])
    assert np.all(m, axis=0).tolist() == [True, False] and np.any(m, axis=1, keepdims=True).tolist() == [[True], [True]]
    assert bool(np.all(m)) is False and m.all(axis=1).tolist() == [False, True]
    with pytest.raises(TypeError, match="all: unexpected arguments"):
        m.all(0, where=True)
    with pytest.raises(TypeError, match=r"any: unexpected arguments \['out'\]"):
        m.any(0, out=np.zeros(2, bool))


def test_uniform_and_normal_fill_in_place_from_their_distributions():
    t = torch.empty(20000, dtype=torch.float64)
    assert t.uniform_() is t and 0.0 <= t.min().item() and t.max().item() < 1.0
    t.uniform_(2, 3)
    assert 2.0 <= t.min().item() and t.max().item() < 3.0 and abs(t.mean().item() - 2.5) < 0.01
    t.uniform_(**{"from": -1.0, "to": -0.5})
    assert -1.0 <= t.min().item() and t.max().item() < -0.5
    with pytest.raises(RuntimeError, match="found from=5.0 > to=1.0"):
        t.uniform_(5.0)  # from=5, to=1, as torch refuses it
    with pytest.raises(TypeError, match="uniform_: expected uniform_"):
        t.uniform_(0, 1, 2)
    with pytest.raises(TypeError, match="uniform_: expected uniform_"):
        t.uniform_(low=0)
    t.normal_(3.0, 0.5)
    assert abs(t.mean().item() - 3.0) < 0.02 and abs(t.std().item() - 0.5) < 0.02
    t.normal_()
    assert abs(t.mean().item()) < 0.03 and abs(t.std().item() - 1.0) < 0.03
    a = torch.empty(4).normal_(generator=torch.Generator().manual_seed(5)).tolist()
    assert torch.empty(4).normal_(generator=torch.Generator().manual_seed(5)).tolist() == a
    b = torch.empty(4).uniform_(generator=torch.Generator().manual_seed(5)).tolist()
    assert torch.empty(4).uniform_(generator=torch.Generator().manual_seed(5)).tolist() == b


def test_to_reads_torchs_argument_forms():
    x = torch.ones(2)
    assert x.to(torch.ones(1, dtype=torch.float64)).dtype == np.float64  # to(other)
    assert x.to(torch.float64, True).dtype == np.float64  # a positional bool is non_blocking
    assert x.to(None) is x and x.to("cpu", None) is x and x.to(dtype=None) is x
    with pytest.raises(RuntimeError, match="device 'cuda:0' is not available"):
        x.to(0)
    with pytest.raises(TypeError, match="to: unexpected keyword argument 'layout'"):
        x.to(layout=None)
    with pytest.raises(RuntimeError, match="should be convertible without narrowing"):
        x.norm(dtype=torch.float16)
    with pytest.raises(NotImplementedError, match="matrix norm"):
        x.norm("fro2")


def test_numpy_integer_dims_work_as_ints():
    x = torch.arange(12.0).reshape(3, 4)
    assert x.sum(np.int64(1)).tolist() == x.sum(1).tolist() and x.softmax(np.int64(-1)).shape == (3, 4)
    assert x.transpose(np.int64(0), np.int64(-1)).shape == (4, 3) and x.size(np.int64(-2)) == 3


def test_random_factories_arguments_and_refusals():
    torch.manual_seed(0)
    assert set(torch.randint(2, (2000,)).tolist()) == {0, 1}  # randint(high, size): from 0
    assert set(torch.randint(1, 2, (50,)).tolist()) == {1} and torch.randint(0, 1, (3,)).tolist() == [0, 0, 0]
    assert torch.randint(0, 5, (3,), dtype=torch.int32).dtype == np.int32
    assert torch.randint(0, 5, (3,), dtype=torch.float32, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match="expected randint\\(high, size\\)"):
        torch.randint(5)
    with pytest.raises(RuntimeError, match="expects 'from' < 'to'"):
        torch.randint(3, 3, (2,))
    a = torch.randint(0, 100, (5,), generator=torch.Generator().manual_seed(2)).tolist()
    assert torch.randint(0, 100, (5,), generator=torch.Generator().manual_seed(2)).tolist() == a
    x = torch.zeros(3, 4, dtype=torch.int32)
    like = torch.randint_like(x, 3)
    assert like.shape == (3, 4) and like.dtype == np.int32 and set(like.flatten().tolist()) <= {0, 1, 2}
    assert set(torch.randint_like(x, 5, 6).flatten().tolist()) == {5}
    assert torch.randint_like(x, 2, dtype=torch.int64).dtype == np.int64
    with pytest.raises(RuntimeError, match="is not available"):
        torch.randint_like(x, 2, device="cuda")
    assert torch.rand_like(torch.zeros(2, dtype=torch.float64)).dtype == np.float64
    assert torch.randn_like(torch.zeros(2, 2)).shape == (2, 2) and torch.zeros_like(x).dtype == np.int32
    assert torch.full_like(x, 2).tolist() == [[2] * 4] * 3
    assert torch.ones_like(x, dtype=torch.float32).dtype == np.float32
    assert torch.randperm(4, dtype=torch.int32).dtype == np.int32
    b = torch.randperm(6, generator=torch.Generator().manual_seed(4)).tolist()
    assert torch.randperm(6, generator=torch.Generator().manual_seed(4)).tolist() == b


def test_normal_and_multinomial_arguments_and_refusals():
    torch.manual_seed(0)
    samples = torch.normal(2.0, size=(20000,))  # std defaults to 1
    assert abs(samples.std().item() - 1.0) < 0.03 and samples.dtype == np.float32
    mean = torch.zeros(3, 1, dtype=torch.float64)
    out = torch.normal(mean, torch.ones(1, 4, dtype=torch.float64))
    assert out.shape == (3, 4) and out.dtype == np.float64  # the tensors' broadcast shape and dtype
    assert torch.normal(0.0, 0.0, (3,)).tolist() == [0.0, 0.0, 0.0]  # std 0 is allowed
    g1 = torch.normal(0.0, 1.0, (4,), generator=torch.Generator().manual_seed(9)).tolist()
    assert torch.normal(0.0, 1.0, (4,), generator=torch.Generator().manual_seed(9)).tolist() == g1
    with pytest.raises(RuntimeError, match="std must be >= 0"):
        torch.normal(0.0, -1.0, (2,))
    with pytest.raises(NotImplementedError, match="no gradient to mean"):
        torch.normal(torch.zeros(2, requires_grad=True), 1.0)
    with pytest.raises(TypeError, match="floating-point mean and std"):
        torch.normal(torch.zeros(2, dtype=torch.long), 1.0)
    rows = torch.multinomial(torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 2.0]]), 1)
    assert rows.tolist() == [[1], [0], [1]] and rows.dtype == np.int64  # each row its own distribution
    m = torch.multinomial(torch.tensor([1, 3], dtype=torch.int64), 4, replacement=True)
    assert m.shape == (4,) and set(m.tolist()) <= {0, 1}
    m1 = torch.multinomial(torch.ones(5), 5, generator=torch.Generator().manual_seed(1)).tolist()
    assert torch.multinomial(torch.ones(5), 5, generator=torch.Generator().manual_seed(1)).tolist() == m1
    for weights, match in [([-1.0, 2.0], "element < 0"), ([float("inf"), 1.0], "`inf`"),
                           ([[0.0, 0.0]], "sum of probabilities <= 0"), ([[[1.0]]], "must be 1 or 2 dim")]:
        with pytest.raises(RuntimeError, match=match):
            torch.multinomial(torch.tensor(weights), 1)
    with pytest.raises(RuntimeError, match="without replacement"):
        torch.multinomial(torch.tensor([[1.0, 1.0], [1.0, 0.0]]), 2)  # the second row has one nonzero weight
