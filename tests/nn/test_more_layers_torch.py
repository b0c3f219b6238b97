"""The activations, losses, padding and helpers that real programs use, checked against torch.

Values and gradients (through a random upstream gradient) from the same float64 inputs; the
modules' printed form; the deprecated spellings with torch's warnings.
"""

import warnings

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

rng = np.random.default_rng(11)
X = rng.standard_normal((3, 4)) * 3
Y = rng.standard_normal((3, 4))

CALLS = {
    "sigmoid": lambda F, x, y: F.sigmoid(x), "tanh": lambda F, x, y: F.tanh(x),
    "leaky_relu": lambda F, x, y: F.leaky_relu(x), "leaky_relu_0.2": lambda F, x, y: F.leaky_relu(x, 0.2),
    "elu": lambda F, x, y: F.elu(x), "elu_alpha": lambda F, x, y: F.elu(x, alpha=0.5),
    "softplus": lambda F, x, y: F.softplus(x), "softplus_beta": lambda F, x, y: F.softplus(x, beta=4, threshold=5),
    "pad_last": lambda F, x, y: F.pad(x, (1, 2)), "pad_two": lambda F, x, y: F.pad(x, (0, 1, 2, 0), value=-1.5),
    "pad_crop": lambda F, x, y: F.pad(x, (-1, 1)),
    "normalize": lambda F, x, y: F.normalize(x), "normalize_dim0_p1": lambda F, x, y: F.normalize(x, p=1, dim=0),
    "cosine_similarity": lambda F, x, y: F.cosine_similarity(x, y),
    "cosine_similarity_0": lambda F, x, y: F.cosine_similarity(x, y, dim=0),
    "smooth_l1": lambda F, x, y: F.smooth_l1_loss(x, y), "smooth_l1_beta": lambda F, x, y: F.smooth_l1_loss(
        x, y, beta=0.5, reduction="none"), "smooth_l1_beta0": lambda F, x, y: F.smooth_l1_loss(x, y, beta=0.0),
    "huber": lambda F, x, y: F.huber_loss(x, y), "huber_delta": lambda F, x, y: F.huber_loss(x, y, reduction="sum",
                                                                                            delta=2.0),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_function_matches_torch(name):
    results = []
    for lib in (ta, torch):
        x, y = lib.tensor(X, requires_grad=True), lib.tensor(Y, requires_grad=True)
        out = CALLS[name](lib.nn.functional, x, y)
        out.backward(lib.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape))))
        results.append([out.detach().numpy(), x.grad.numpy(), None if y.grad is None else y.grad.numpy()])
    for a, b in zip(*results):
        if a is None or b is None:
            assert a is None and b is None or np.all(b == 0) or np.all(a == 0)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("make", [
    lambda nn: nn.LeakyReLU(), lambda nn: nn.LeakyReLU(0.2, inplace=True), lambda nn: nn.ELU(),
    lambda nn: nn.ELU(alpha=0.3), lambda nn: nn.Softplus(), lambda nn: nn.Softplus(beta=2, threshold=10),
    lambda nn: nn.SmoothL1Loss(), lambda nn: nn.SmoothL1Loss(beta=0.5), lambda nn: nn.HuberLoss(),
])
def test_modules_compute_and_print_as_torch(make):
    ours, theirs = make(ta.nn), make(torch.nn)
    assert repr(ours) == repr(theirs)
    args = (X,) if "Loss" not in type(ours).__name__ else (X, Y)
    mine = ours(*(ta.tensor(a) for a in args))
    other = theirs(*(torch.tensor(a) for a in args))
    np.testing.assert_allclose(mine.numpy(), other.numpy(), rtol=1e-12, atol=1e-15)


def test_leaky_relu_in_place_changes_a_tensor_outside_the_graph_as_torch():
    for lib in (ta, torch):
        x = lib.tensor([-2.0, 3.0])
        lib.nn.LeakyReLU(0.5, inplace=True)(x)
        np.testing.assert_array_equal(x.numpy(), [-1.0, 3.0])


def test_embedding_from_pretrained_as_torch():
    table = rng.standard_normal((5, 3))
    for freeze in (True, False):
        mine = ta.nn.Embedding.from_pretrained(ta.tensor(table), freeze=freeze, padding_idx=1)
        other = torch.nn.Embedding.from_pretrained(torch.tensor(table), freeze=freeze, padding_idx=1)
        assert repr(mine) == repr(other) and mine.weight.requires_grad == other.weight.requires_grad
        ids = [[1, 4, 0]]
        np.testing.assert_array_equal(mine(ta.tensor(ids)).detach().numpy(), other(torch.tensor(ids)).detach().numpy())
        if not freeze:
            mine(ta.tensor(ids)).sum().backward()
            other(torch.tensor(ids)).sum().backward()
            np.testing.assert_array_equal(mine.weight.grad.numpy(), other.weight.grad.numpy())
    with pytest.raises(ValueError, match="Embeddings parameter is expected to be 2-dimensional"):
        ta.nn.Embedding.from_pretrained(ta.ones(3))


@pytest.mark.parametrize("name", ["uniform", "normal", "xavier_uniform", "xavier_normal", "kaiming_uniform",
                                  "kaiming_normal", "orthogonal"])
def test_the_deprecated_init_spellings_warn_and_do_what_the_underscore_ones_do(name):
    with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
        getattr(torch.nn.init, name)(torch.empty(3, 4))
    ta.manual_seed(3)
    with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
        old = getattr(ta.nn.init, name)(ta.empty(3, 4))
    ta.manual_seed(3)
    new = getattr(ta.nn.init, name + "_")(ta.empty(3, 4))
    np.testing.assert_array_equal(old.numpy(), new.numpy())


def test_constant_spelling_too():
    with pytest.warns(FutureWarning):
        out = ta.nn.init.constant(ta.empty(2), 0.5)
    np.testing.assert_array_equal(out.numpy(), [0.5, 0.5])


def test_summary_writer_imports_and_refuses_clearly():
    from tinyattn.utils.tensorboard import SummaryWriter

    with pytest.raises(RuntimeError, match="tinyattn does not write TensorBoard event files"):
        SummaryWriter("runs/x")


@pytest.mark.parametrize("call, error, message", [
    (lambda F: F.pad(ta.zeros(2, 3), (1,)), RuntimeError, "Padding length must be divisible by 2"),
    (lambda F: F.pad(ta.zeros(2, 3), (1,) * 6), RuntimeError, "less than or equal to two times the input dimension"),
    (lambda F: F.pad(ta.zeros(2, 3), (1, 1), mode="reflect"), NotImplementedError, "mode='reflect'"),
])
def test_pad_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(ta.nn.functional)


def test_deprecated_f_sigmoid_and_tanh_exist_in_torch_too():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert callable(torch.nn.functional.sigmoid) and callable(torch.nn.functional.tanh)


@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 3, 4), (2, 2, 3, 4)])
@pytest.mark.parametrize("which", ["softmax", "log_softmax"])
def test_the_implicit_dim_is_torchs_guess_with_its_warning(shape, which):
    x = rng.standard_normal(shape)
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {which} has been deprecated"):
        ours = getattr(ta.nn.functional, which)(ta.tensor(x))
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {which} has been deprecated"):
        theirs = getattr(torch.nn.functional, which)(torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    module = {"softmax": "Softmax", "log_softmax": "LogSoftmax"}[which]
    with pytest.warns(UserWarning):
        np.testing.assert_allclose(getattr(ta.nn, module)()(ta.tensor(x)).numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("shape, groups", [((4, 4, 3), 1), ((6, 3, 3, 3), 2), ((2, 3, 3, 3, 3), 1)])
def test_dirac_is_torchs_and_makes_a_convolution_pass_its_input_through(shape, groups):
    np.testing.assert_array_equal(ta.nn.init.dirac_(ta.empty(*shape), groups).numpy(),
                                  torch.nn.init.dirac_(torch.empty(*shape), groups).numpy())
    w = ta.nn.init.dirac_(ta.empty(3, 3, 3, 3))
    x = ta.tensor(rng.standard_normal((1, 3, 5, 5)), dtype=ta.float32)
    np.testing.assert_allclose(ta.nn.functional.conv2d(x, w, padding=1).numpy(), x.numpy(), rtol=1e-6)


def test_sparse_zeros_that_many_of_each_column_and_draws_the_rest_with_std():
    ta.manual_seed(0)
    w = ta.nn.init.sparse_(ta.empty(200, 30), sparsity=0.25, std=0.5).numpy()
    assert all((w[:, j] == 0).sum() == 50 for j in range(30))
    assert abs(w[w != 0].std() - 0.5) < 0.03
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        ta.nn.init.sparse_(ta.empty(2, 2, 2), 0.5)
    with pytest.warns(FutureWarning, match="`nn.init.sparse` is now deprecated"):
        ta.nn.init.sparse(ta.empty(4, 4), 0.5)
