"""Optimizer state against torch.optim: state dicts both ways (in memory and through the file), named
parameters, ``add_param_group`` and ``step(closure)``, each over 20+ step trajectories."""

import io

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

OPTIONS = {
    "SGD": [dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.5, nesterov=True, weight_decay=0.01),
            dict(lr=0.1, momentum=0.0)],
    "Adam": [dict(lr=0.01), dict(lr=0.02, betas=(0.8, 0.95), amsgrad=True, weight_decay=0.1)],
    "AdamW": [dict(lr=0.01), dict(lr=0.03, weight_decay=0.2, amsgrad=True)],
}
CASES = [(name, i) for name, grid in OPTIONS.items() for i in range(len(grid))]
SHAPES = [(3, 2), (), (4,)]


def pair(rng):
    inits = [rng.standard_normal(s) for s in SHAPES]
    return [nn.Parameter(np.array(a)) for a in inits], [torch.nn.Parameter(torch.tensor(a)) for a in inits]


def run(opt, params, grads, lib):
    for g in grads:
        for p, gi in zip(params, g):
            p.grad = lib.tensor(np.array(gi))
        opt.step()


def assert_same(ours, theirs, where):
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.array, b.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=where)


def through_file(state, save, load):
    buffer = io.BytesIO()
    save(state, buffer)
    buffer.seek(0)
    return load(buffer)


@pytest.mark.parametrize(("name", "index"), CASES)
@pytest.mark.parametrize("via", ["memory", "file"])
def test_torchs_state_dict_continues_in_tinyattn_and_back(name, index, via):
    """torch runs 8 steps, tinyattn resumes from its state for 8, torch resumes from ours for 8 more:
    one trajectory, equal to torch running all 24."""
    rng = np.random.default_rng(index)
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(24)]
    ours, theirs = pair(rng)
    reference = [torch.nn.Parameter(p.detach().clone()) for p in theirs]
    options = OPTIONS[name][index]
    ref_opt = getattr(torch.optim, name)(reference, **options)
    run(ref_opt, reference, grads, torch)

    theirs_opt = getattr(torch.optim, name)(theirs, **options)
    run(theirs_opt, theirs, grads[:8], torch)
    state = theirs_opt.state_dict()
    if via == "file":
        state = through_file(state, torch.save, ta.load)
    with torch.no_grad():
        for a, b in zip(ours, theirs):
            a.array[...] = b.numpy()
    ours_opt = getattr(optim, name)(ours, lr=1.0)  # the hyperparameters come from the state dict
    ours_opt.load_state_dict(state)
    run(ours_opt, ours, grads[8:16], ta)

    state = ours_opt.state_dict()
    if via == "file":
        state = through_file(state, ta.save, lambda f: torch.load(f, weights_only=True))
    else:
        state = {"state": {k: {n: torch.tensor(v.numpy()) for n, v in s.items()} for k, s in state["state"].items()},
                 "param_groups": state["param_groups"]}
    again = [torch.nn.Parameter(torch.tensor(a.array)) for a in ours]
    again_opt = getattr(torch.optim, name)(again, lr=1.0)
    again_opt.load_state_dict(state)
    run(again_opt, again, grads[16:], torch)
    assert_same([nn.Parameter(a.detach().numpy()) for a in again], reference, f"{name} {options} via {via}")


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_state_dict_has_torchs_keys_and_types(name):
    rng = np.random.default_rng(3)
    ours, theirs = pair(rng)
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(2)]
    options = dict(lr=0.1, momentum=0.9) if name == "SGD" else dict(lr=0.1)
    ours_opt, theirs_opt = getattr(optim, name)(ours, **options), getattr(torch.optim, name)(theirs, **options)
    run(ours_opt, ours, grads, ta)
    run(theirs_opt, theirs, grads, torch)
    a, b = ours_opt.state_dict(), theirs_opt.state_dict()
    assert sorted(a["state"]) == sorted(b["state"])
    for key in b["state"]:
        assert sorted(a["state"][key]) == sorted(b["state"][key])
        for buffer, value in b["state"][key].items():
            assert isinstance(a["state"][key][buffer], ta.Tensor)
            assert a["state"][key][buffer].shape == tuple(value.shape)
            assert str(a["state"][key][buffer].dtype) == str(value.dtype).removeprefix("torch."), buffer
    torch_only = {"foreach", "differentiable", "fused", "capturable"}  # torch's kernels' switches
    assert set(a["param_groups"][0]) == set(b["param_groups"][0]) - torch_only


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_named_parameters_and_an_added_group_follow_torchs_trajectory(name):
    rng = np.random.default_rng(11)
    ta.manual_seed(0)
    ours = nn.Sequential(nn.Linear(3, 4, dtype=ta.float64), nn.Linear(4, 2, dtype=ta.float64))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4).double(), torch.nn.Linear(4, 2).double())
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.tensor(p.array))
    options = dict(lr=0.05, momentum=0.9) if name == "SGD" else dict(lr=0.01)
    ours_opt = getattr(optim, name)(ours[0].named_parameters(), **options)
    theirs_opt = getattr(torch.optim, name)(theirs[0].named_parameters(), **options)
    ours_opt.add_param_group({"params": list(ours[1].named_parameters()), "lr": 0.02})
    theirs_opt.add_param_group({"params": list(theirs[1].named_parameters()), "lr": 0.02})
    a, b = ours_opt.state_dict()["param_groups"], theirs_opt.state_dict()["param_groups"]
    assert [g["param_names"] for g in a] == [g["param_names"] for g in b] == [["weight", "bias"]] * 2
    assert [g["params"] for g in a] == [g["params"] for g in b] and a[1]["lr"] == b[1]["lr"] == 0.02
    x, y = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))

    def closure_for(model, opt, lib, calls):
        def closure():
            calls.append(1)
            opt.zero_grad()
            loss = ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
            loss.backward()
            return loss
        return closure

    ours_calls, theirs_calls = [], []
    for step in range(20):
        with ta.no_grad(), torch.no_grad():  # the optimizers turn grad mode on for the closure
            loss_a = ours_opt.step(closure_for(ours, ours_opt, ta, ours_calls))
            loss_b = theirs_opt.step(closure_for(theirs, theirs_opt, torch, theirs_calls))
        assert loss_a.item() == pytest.approx(loss_b.item(), rel=1e-10), step
        assert_same(list(ours.parameters()), list(theirs.parameters()), f"step {step}")
    assert len(ours_calls) == len(theirs_calls) == 20
    assert ours_opt.step() is None


def test_parameter_groups_refuse_mixed_or_repeated_parameters():
    a, b = nn.Parameter(np.ones(2)), nn.Parameter(np.ones(3))
    opt = optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="appear twice"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="all parameter groups should be named"):
        opt.add_param_group({"params": [("b", b)]})
    with pytest.raises(ValueError, match="all parameters in a group must be named"):
        optim.SGD([("a", a), b], lr=0.1)
    with pytest.raises(ValueError, match=r"group sizes \(2,\), this optimizer's \(1,\)"):
        opt.load_state_dict(optim.SGD([a, b], lr=0.1).state_dict())


def test_an_optimizer_of_your_own_keeps_its_state_by_parameter_as_torchs():
    """A tutorial's optimizer: ``self.state[p]`` (a defaultdict keyed by the parameter) for its own buffers."""
    def train(lib):
        class MomentumSGD(lib.optim.Optimizer):
            def __init__(self, params, lr=0.1, momentum=0.9):
                super().__init__(params, dict(lr=lr, momentum=momentum))

            @lib.no_grad()
            def step(self):
                for group in self.param_groups:
                    for p in group["params"]:
                        if p.grad is None:
                            continue
                        state = self.state[p]
                        if "velocity" not in state:
                            state["velocity"] = lib.zeros_like(p)
                        state["velocity"].mul_(group["momentum"]).add_(p.grad)
                        p.add_(state["velocity"], alpha=-group["lr"])

        rng = np.random.default_rng(0)
        w = lib.tensor(rng.standard_normal(3), requires_grad=True)
        opt = MomentumSGD([w])
        for _ in range(4):
            opt.zero_grad()
            ((w * w).sum() + w.sin().sum()).backward()
            opt.step()
        return w.detach().numpy(), opt.state[w]["velocity"].numpy()

    for ours, theirs in zip(train(ta), train(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
