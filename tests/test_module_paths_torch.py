"""torch's module paths that real programs import, against torch: data (datasets, samplers, loaders over
iterable datasets), nn.utils and nn.utils.rnn, backends' flags, jit, amp, distributed, onnx.

Values and gradients are compared where the name computes something; defaults, errors and warnings where
it is a switch; where tinyattn cannot do what torch does (compile, export, a process group, bfloat16), the
call says so, and the test reads what it says.
"""

from __future__ import annotations

import importlib
import typing
import warnings

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

PATHS = [
    "utils.data", "utils.data.dataset", "utils.data.dataloader", "utils.data.sampler", "nn.utils", "nn.utils.rnn",
    "backends.cudnn", "backends.cuda", "jit", "amp", "cuda.amp", "distributed", "onnx",
]


@pytest.mark.parametrize("path", PATHS)
def test_the_module_path_imports_as_torch_s_does(path):
    ours, theirs = importlib.import_module("tinyattn." + path), importlib.import_module("torch." + path)
    assert ours.__name__ == "tinyattn." + path and theirs
    assert eval("ta." + path) is ours  # (reachable as an attribute too: torch.backends.cudnn.benchmark = True)


NAMES = {
    "utils.data.dataset": ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "random_split"],
    "utils.data.dataloader": ["DataLoader", "default_collate", "get_worker_info"],
    "utils.data.sampler": ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
                           "WeightedRandomSampler", "BatchSampler"],
    "utils.data": ["IterableDataset", "get_worker_info", "BatchSampler", "ConcatDataset", "RandomSampler"],
    "nn.utils": ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"],
    "nn.utils.rnn": ["pad_sequence"],
    "amp": ["autocast", "GradScaler"],
    "cuda.amp": ["autocast", "GradScaler"],
    "jit": ["Final", "script", "ignore", "unused", "export", "is_scripting", "trace"],
}


@pytest.mark.parametrize("path", list(NAMES))
def test_the_names_real_programs_import_from_each_path_exist_in_both(path):
    for name in NAMES[path]:
        assert hasattr(importlib.import_module("torch." + path), name), name
        assert hasattr(importlib.import_module("tinyattn." + path), name), name


# -- data -------------------------------------------------------------------------------------------------


def _stream(lib, n, sized):
    class Stream(lib.utils.data.IterableDataset):
        def __iter__(self):
            return iter([np.full(2, i, dtype=np.float32) for i in range(n)])

    if sized:
        Stream.__len__ = lambda self: n
    return Stream()


@pytest.mark.parametrize("batch_size, drop_last", [(3, False), (3, True), (1, False), (7, False), (None, False)])
def test_a_loader_over_an_iterable_dataset_gives_torch_s_batches(batch_size, drop_last):
    got = {}
    for lib in (ta, torch):
        loader = lib.utils.data.DataLoader(_stream(lib, 7, sized=True), batch_size=batch_size, drop_last=drop_last)
        got[lib.__name__] = ([np.asarray(b).tolist() for b in loader], len(loader))
    assert got["tinyattn"] == got["torch"]


def test_an_iterable_dataset_refuses_shuffle_and_a_sampler_and_a_length_it_does_not_have_as_torch():
    for option in ({"shuffle": True}, {"sampler": [0, 1]}, {"batch_sampler": [[0]]}):
        messages = []
        for lib in (ta, torch):
            with pytest.raises(ValueError) as err:
                lib.utils.data.DataLoader(_stream(lib, 3, sized=False), **option)
            messages.append(str(err.value))
        assert messages[0] == messages[1]
    for lib in (ta, torch):
        with pytest.raises(TypeError):
            len(lib.utils.data.DataLoader(_stream(lib, 3, sized=False), batch_size=2))
    assert ta.utils.data.get_worker_info() is None is torch.utils.data.get_worker_info()


@pytest.mark.parametrize("drop_last", [False, True])
def test_sequential_and_batch_samplers_and_a_given_sampler_match_torch(drop_last):
    data = list(range(11))
    for lib in (ta, torch):
        sampler = lib.utils.data.SequentialSampler(data)
        batches = list(lib.utils.data.BatchSampler(sampler, 4, drop_last))
        loader = lib.utils.data.DataLoader(
            lib.utils.data.TensorDataset(lib.arange(11)), sampler=[10, 3, 5, 0], batch_size=3, drop_last=drop_last)
        by_batches = lib.utils.data.DataLoader(data, batch_sampler=[[1, 2], [9]])
        if lib is ta:
            ours = (batches, len(sampler), [b[0].tolist() for b in loader], [b.tolist() for b in by_batches])
        else:
            theirs = (batches, len(sampler), [b[0].tolist() for b in loader], [b.tolist() for b in by_batches])
    assert ours == theirs


def test_the_random_samplers_have_torch_s_properties_and_repeat_under_a_seed():
    data = list(range(20))
    ta.manual_seed(3)
    first = list(ta.utils.data.RandomSampler(data))
    ta.manual_seed(3)
    assert list(ta.utils.data.RandomSampler(data)) == first and sorted(first) == data
    drawn = list(ta.utils.data.RandomSampler(data, replacement=True, num_samples=50))
    assert len(drawn) == 50 and all(0 <= i < 20 for i in drawn)
    assert len(list(ta.utils.data.RandomSampler(data, num_samples=45))) == 45  # (whole permutations, as torch)
    assert sorted(ta.utils.data.SubsetRandomSampler([4, 8, 15])) == [4, 8, 15]
    weighted = list(ta.utils.data.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200))
    assert set(weighted) <= {1, 3} and 100 < weighted.count(3) < 200
    for bad in ({"replacement": 1}, {"num_samples": 0}):
        errors = []
        for lib in (ta, torch):
            with pytest.raises((TypeError, ValueError)) as err:
                lib.utils.data.RandomSampler(data, **bad)
            errors.append((type(err.value), str(err.value)))
        assert errors[0] == errors[1]
    for bad in (0, 2.5):
        errors = []
        for lib in (ta, torch):
            with pytest.raises(ValueError) as err:
                lib.utils.data.BatchSampler(data, bad, False)
            errors.append(str(err.value))
        assert errors[0] == errors[1]


def test_a_batch_sampler_is_exclusive_with_the_batching_options_as_in_torch():
    errors = []
    for lib in (ta, torch):
        with pytest.raises(ValueError) as err:
            lib.utils.data.DataLoader(list(range(5)), batch_sampler=[[0]], batch_size=2)
        errors.append(str(err.value))
        with pytest.raises(ValueError) as err:
            lib.utils.data.DataLoader(list(range(5)), sampler=[0], shuffle=True)
        errors.append(str(err.value))
    assert errors[:2] == errors[2:]


def test_concat_dataset_matches_torch():
    for lib in (ta, torch):
        joined = lib.utils.data.ConcatDataset([list(range(3)), list(range(10, 15))])
        result = (len(joined), [joined[i] for i in range(len(joined))], joined[-1], joined.cumulative_sizes)
        if lib is ta:
            ours = result
        else:
            assert ours == result


# -- nn.utils -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_pad_sequence_values_and_gradients_match_torch(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 6, rng.integers(1, 5)).tolist()
    trailing = [(), (3,), (2, 2)][seed % 3]
    arrays = [rng.standard_normal((n, *trailing)) for n in lengths]
    batch_first, side, value = bool(seed % 2), ["right", "left"][seed // 3 % 2], float(rng.standard_normal())
    out = {}
    for lib in (ta, torch):
        seqs = [lib.tensor(a, requires_grad=True) for a in arrays]
        padded = lib.nn.utils.rnn.pad_sequence(seqs, batch_first=batch_first, padding_value=value, padding_side=side)
        upstream = np.random.default_rng(seed + 100).standard_normal(tuple(padded.shape))
        padded.backward(lib.tensor(upstream))
        out[lib.__name__] = (padded.detach().numpy(), [s.grad.numpy() for s in seqs])
    np.testing.assert_array_equal(out["tinyattn"][0], out["torch"][0])
    for ours, theirs in zip(out["tinyattn"][1], out["torch"][1]):
        np.testing.assert_array_equal(ours, theirs)


def test_pad_sequence_refuses_as_torch_does():
    for lib in (ta, torch):
        with pytest.raises(RuntimeError, match="empty"):
            lib.nn.utils.rnn.pad_sequence([])
        with pytest.raises(RuntimeError, match="padding_side"):
            lib.nn.utils.rnn.pad_sequence([lib.ones(2)], padding_side="middle")
        with pytest.raises(RuntimeError):
            lib.nn.utils.rnn.pad_sequence([lib.ones(2, 3), lib.ones(2, 4)])


def test_clip_grad_norm_returns_a_tensor_and_the_other_helpers_match_torch():
    rng = np.random.default_rng(0)
    shapes = [(3, 2), (4,)]
    grads, values = [rng.standard_normal(s) * 3 for s in shapes], [rng.standard_normal(s) for s in shapes]
    got = {}
    for lib in (ta, torch):
        params = [lib.nn.Parameter(lib.tensor(v)) for v in values]
        for p, g in zip(params, grads):
            p.grad = lib.tensor(g.copy())
        norm = lib.nn.utils.clip_grad_norm_(params, 1.0)
        clipped = [p.grad.numpy().copy() for p in params]
        lib.nn.utils.clip_grad_value_(params, 0.1)
        vec = lib.nn.utils.parameters_to_vector(params)
        lib.nn.utils.vector_to_parameters(vec * 2, params)
        got[lib.__name__] = (float(norm), norm.shape, clipped, [p.grad.numpy() for p in params],
                             [p.detach().numpy() for p in params])
    ours, theirs = got["tinyattn"], got["torch"]
    assert np.isclose(ours[0], theirs[0]) and ours[1] == tuple(theirs[1])
    for a, b in zip(ours[2] + ours[3] + ours[4], theirs[2] + theirs[3] + theirs[4]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# -- backends, jit, amp, distributed, onnx -------------------------------------------------------------


def test_backend_flags_default_as_a_cpu_torch_s_and_can_be_set():
    for flag in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(ta.backends.cudnn, flag) == getattr(torch.backends.cudnn, flag), flag
    assert ta.backends.cudnn.is_available() == torch.backends.cudnn.is_available() is False
    assert ta.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    assert ta.backends.cuda.is_built() == torch.backends.cuda.is_built()
    for name in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled"):
        assert getattr(ta.backends.cuda, name)() == getattr(torch.backends.cuda, name)(), name
    ta.backends.cudnn.benchmark = True
    assert ta.backends.cudnn.benchmark is True
    ta.backends.cudnn.benchmark = False
    with ta.backends.cuda.sdp_kernel(enable_flash=False):
        assert not ta.backends.cuda.flash_sdp_enabled()
    assert ta.backends.cuda.flash_sdp_enabled()


def scaled(x):
    return x * 2 + 1


def test_jit_annotations_and_script_run_eagerly_with_torch_s_results():
    x = np.arange(4.0)
    assert ta.jit.script(scaled)(ta.tensor(x)).tolist() == torch.jit.script(scaled)(torch.tensor(x)).tolist()
    assert ta.jit.Final is torch.jit.Final is typing.Final
    assert ta.jit.is_scripting() is torch.jit.is_scripting() is False
    assert ta.jit.ignore(scaled) is scaled and ta.jit.unused(scaled) is scaled
    with pytest.raises(RuntimeError, match="no TorchScript compiler.*state_dict"):
        ta.jit.trace(scaled, ta.ones(2))


def test_grad_scaler_warns_and_disables_itself_as_torch_without_cuda_and_then_passes_through():
    for lib in (ta, torch):
        with pytest.warns(UserWarning, match="not available.*Disabling"):
            scaler = lib.amp.GradScaler()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            quiet = lib.amp.GradScaler(enabled=False)
        for s in (scaler, quiet):
            w = lib.nn.Parameter(lib.ones(2))
            opt = lib.optim.SGD([w], lr=0.5)
            loss = (w * 3).sum()
            assert s.scale(loss) is loss and not s.is_enabled() and s.get_scale() == 1.0 and s.state_dict() == {}
            s.scale(loss).backward()
            s.unscale_(opt)
            s.step(opt)
            s.update()
            assert w.detach().numpy().tolist() == [-0.5, -0.5]


def test_autocast_on_cuda_warns_and_does_nothing_and_on_the_cpu_says_what_it_does_here():
    for lib in (ta, torch):
        with pytest.warns(UserWarning, match="Disabling autocast"):
            with lib.autocast("cuda"):
                y = lib.ones(2) @ lib.ones(2)
        assert float(y) == 2.0
        with pytest.warns(UserWarning):
            with lib.cuda.amp.autocast():
                pass
    with pytest.warns(UserWarning, match="tinyattn has no bfloat16.*full precision"):
        with ta.autocast("cpu", dtype=ta.bfloat16 if hasattr(ta, "bfloat16") else "bfloat16"):
            y = ta.ones(3) @ ta.ones(3)
    assert y.dtype == ta.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ta.autocast("cpu", enabled=False):
            pass

        @ta.autocast("cpu", dtype=ta.float32)
        def f(x):
            return x + 1

        assert float(f(ta.ones(()))) == 2.0


def test_distributed_answers_as_a_torch_built_without_it_and_onnx_says_what_to_do():
    assert ta.distributed.is_available() is False and ta.distributed.is_initialized() is False
    assert torch.distributed.is_initialized() is False  # (this torch has it built, not started)
    for name in ("init_process_group", "get_rank", "get_world_size", "barrier", "all_reduce"):
        with pytest.raises(RuntimeError, match="one process.*rank 0 of a world of 1"):
            getattr(ta.distributed, name)()
    with pytest.raises(RuntimeError, match="cannot export ONNX.*state_dict"):
        ta.onnx.export(ta.nn.Linear(2, 2), (ta.ones(1, 2),), "model.onnx")
