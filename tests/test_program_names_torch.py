"""Names real programs stopped on, each against torch: transposed convolutions (values and gradients), Dropout2d,
rms_norm, log1p/expm1/log10/lerp_/triu_, randint(high, size=), Linear's positional device and dtype,
``del module.weight``, torch.compile, DataParallel, AdamW(fused=True)."""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

TOL = dict(rtol=1e-10, atol=1e-12)


def _copy_params(ours, theirs):
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})


@pytest.mark.parametrize("k, options", [
    (2, dict(stride=2, padding=1, output_padding=1)), (2, dict(stride=1)), (2, dict(stride=(2, 3), dilation=2)),
    (2, dict(stride=3, padding=2, bias=False)), (1, dict(stride=2, padding=1, output_padding=1)),
], ids=str)
def test_conv_transpose_values_and_gradients_match_torch(k, options):
    rng = np.random.default_rng(k + len(options))
    ours = getattr(ta.nn, f"ConvTranspose{k}d")(3, 2, 3, **options, dtype=ta.float64)
    theirs = getattr(torch.nn, f"ConvTranspose{k}d")(3, 2, 3, **options, dtype=torch.float64)
    _copy_params(ours, theirs)
    data = rng.standard_normal((2, 3) + (4, 5)[:k])
    results = []
    for lib, module in ((ta, ours), (torch, theirs)):
        x = lib.tensor(data, requires_grad=True)
        out = module(x)
        (out * lib.tensor(rng.standard_normal(tuple(out.shape)))).sum().backward()
        results.append([out.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in module.parameters()])
        rng = np.random.default_rng(k + len(options))
        rng.standard_normal((2, 3) + (4, 5)[:k])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, **TOL)


def test_dropout2d_drops_whole_channels_scaled_as_torch():
    x = ta.ones(6, 50, 4, 4, dtype=ta.float64)
    ta.manual_seed(0)
    out = ta.nn.Dropout2d(0.3)(x).numpy()
    per_channel = out.reshape(6, 50, -1)
    assert np.all(per_channel == per_channel[..., :1])  # a whole feature map kept or dropped
    assert set(np.unique(out)) <= {0.0, 1 / 0.7}
    assert 0.15 < (per_channel[..., 0] == 0).mean() < 0.45
    layer = ta.nn.Dropout2d(0.3)
    layer.eval()
    assert layer(x) is x
    assert repr(layer) == repr(torch.nn.Dropout2d(0.3))


def test_rms_norm_and_the_elementwise_names_match_torch():
    rng = np.random.default_rng(1)
    data, w, end = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((3, 4))
    results = []
    for lib in (ta, torch):
        x = lib.tensor(data, requires_grad=True)
        y = lib.nn.functional.rms_norm(x, (4,), lib.tensor(w)) + x.abs().log1p() * x.expm1() + (x * x + 1).log10()
        y = y + lib.lerp(x, lib.tensor(end), 0.3) + x.exp().log2()
        (y * lib.tensor(end)).sum().backward()
        ema = lib.tensor(data.copy())
        with lib.no_grad():
            ema.lerp_(lib.tensor(end), 0.1)
            tri = lib.tensor(data.copy()).triu_(1) + lib.tensor(data.copy()).tril_(-1)
        tiny = lib.tensor([1e-12, -1e-13], dtype=lib.float64)
        results.append([y.detach().numpy(), x.grad.numpy(), ema.numpy(), tri.numpy(), tiny.log1p().numpy(),
                         tiny.expm1().numpy()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)


def test_randint_linear_delattr_compile_dataparallel_and_fused_adamw_as_torch():
    for lib in (ta, torch):
        lib.manual_seed(0)
        assert tuple(lib.randint(5, size=(3, 2)).shape) == (3, 2)
        assert tuple(lib.randint(2, 5, (4,)).shape) == (4,)
        layer = lib.nn.Linear(3, 2, False, None, lib.float64)  # bias, device, dtype given in place
        assert layer.weight.dtype == lib.float64 and layer.bias is None
        del layer.weight
        assert "weight" not in dict(layer.named_parameters())
        layer.weight = lib.ones(2, 3, dtype=lib.float64)  # (a plain tensor may now take the name)
        np.testing.assert_allclose(layer(lib.ones(1, 3, dtype=lib.float64)).numpy(), [[3.0, 3.0]])
        model = lib.nn.Linear(2, 2)
        assert lib.compile(model) is model or lib is torch
        wrapped = lib.nn.DataParallel(lib.nn.Linear(2, 3))
        assert list(wrapped.state_dict()) == ["module.weight", "module.bias"]
        assert tuple(wrapped(lib.ones(4, 2)).shape) == (4, 3)
        lib.optim.AdamW(model.parameters(), lr=0.1, fused=False, foreach=False)

    @ta.compile(mode="max-autotune")
    def double(x):
        return x * 2

    assert double(ta.tensor([1.0])).item() == 2.0 and ta.compile(double) is double


@pytest.mark.parametrize("call", [
    lambda lib: lib.ones(2).to_sparse(), lambda lib: lib.sparse_coo_tensor([[0]], [1.0], (2,)),
    lambda lib: lib.view_as_complex(lib.ones(2, 2)), lambda lib: lib.complex(lib.ones(1), lib.ones(1)),
], ids=["to_sparse", "sparse_coo_tensor", "view_as_complex", "complex"])
def test_complex_and_sparse_tensors_are_refused_with_a_reason_where_torch_makes_them(call):
    """torch makes each of these; tinyattn, real and dense, refuses each with one clear error, never a value."""
    call(torch)
    with pytest.raises(NotImplementedError, match="(sparse|complex) tensors are not supported in tinyattn"):
        call(ta)
    assert ta.ones(2).is_sparse is False and ta.ones(2).is_complex() is False


def test_a_timer_times_a_statement_as_torchs_benchmark_timer():
    counter = {"runs": 0}

    def work():
        counter["runs"] += 1

    import torch.utils.benchmark as torch_benchmark

    import tinyattn.utils.benchmark as ta_benchmark

    for benchmark in (ta_benchmark, torch_benchmark):
        counter["runs"] = 0
        measurement = benchmark.Timer(stmt="work()", globals={"work": work}).timeit(50)
        assert counter["runs"] >= 50 and len(measurement.times) == 1 and 0 < measurement.times[0] < 0.01
        assert "work()" in repr(measurement)


def test_the_older_backward_hook_warns_and_sees_the_inputs_gradient_of_a_one_op_module_as_torch():
    seen = {}
    for lib in (ta, torch):
        layer = lib.nn.Linear(3, 2).double()
        x = lib.ones(4, 3, dtype=lib.float64, requires_grad=True)
        seen[lib] = []
        layer.register_backward_hook(lambda m, gi, go, lib=lib: seen[lib].append(tuple(gi[0].shape)))
        layer(x).sum().backward()
    assert seen[ta] == [(4, 3)] and len(seen[torch]) == 1


def test_reflected_add_and_mul_record_the_tensor_first_as_torch():
    """``2 * b`` is ``b * 2`` in the graph: next_functions starts with b's node (a tutorial walks it)."""
    for lib in (ta, torch):
        b = lib.ones(2, requires_grad=True).sin()
        for out in (2 * b, 2 + b):
            first, second = out.grad_fn.next_functions
            assert first[0] is b.grad_fn and second[0] is None
