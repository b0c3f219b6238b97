"""``optim.lr_scheduler`` against torch's: 30-step rate (and momentum) trajectories over option grids,
two schedulers on one optimizer, SequentialLR, ReduceLROnPlateau, and state dicts loaded both ways."""

import io
import math

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def decay(epoch):
    return 0.95**epoch


class Warmup:  # a callable object: its attributes are kept in LambdaLR's state dict
    def __init__(self, steps):
        self.steps = steps

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.steps)


GRID = {
    "StepLR": [dict(step_size=3), dict(step_size=1, gamma=0.5), dict(step_size=7, gamma=0.9)],
    "MultiStepLR": [dict(milestones=[2, 5, 5, 11]), dict(milestones=[1], gamma=0.3)],
    "ExponentialLR": [dict(gamma=0.9), dict(gamma=0.5)],
    "LambdaLR": [dict(lr_lambda=decay), dict(lr_lambda="per group")],
    "LinearLR": [dict(), dict(start_factor=0.1, end_factor=0.8, total_iters=12), dict(start_factor=1.0,
                                                                                     end_factor=0.0)],
    "CosineAnnealingLR": [dict(T_max=10), dict(T_max=4, eta_min=0.01), dict(T_max=30)],
    "OneCycleLR": [dict(max_lr=1.0, total_steps=31), dict(max_lr=[0.5, 2.0], total_steps=40, pct_start=0.25,
                                                          anneal_strategy="linear", three_phase=True),
                   dict(max_lr=0.3, epochs=5, steps_per_epoch=7, cycle_momentum=False, div_factor=10.0)],
}
CASES = [(name, i, opt) for name, grid in GRID.items() for i in range(len(grid)) for opt in ("SGD", "Adam")]


def optimizer_pair(name, rng):
    arrays = [rng.standard_normal((3,)), rng.standard_normal((2, 2))]
    ours = [nn.Parameter(a.copy()) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    kwargs = dict(lr=0.1, momentum=0.9) if name == "SGD" else dict(lr=0.1)
    groups = lambda ps: [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.05}]  # noqa: E731
    return (getattr(optim, name)(groups(ours), **kwargs), getattr(torch.optim, name)(groups(theirs), **kwargs),
            ours, theirs)


def make(lib, name, options, opt):
    options = dict(options)
    if options.get("lr_lambda") == "per group":
        options["lr_lambda"] = [decay, Warmup(4)]
    return getattr(lib.optim.lr_scheduler, name)(opt, **options)


def momentum(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def assert_groups_equal(ours, theirs, where):
    for a, b in zip(ours.param_groups, theirs.param_groups):
        assert a["lr"] == pytest.approx(b["lr"], rel=1e-12, abs=1e-15), where
        assert momentum(a) == pytest.approx(momentum(b), rel=1e-12), where
        assert a.get("initial_lr") == pytest.approx(b.get("initial_lr")), where


def train_step(opt, params, lib, rng_grads):
    for p, g in zip(params, rng_grads):
        p.grad = lib.tensor(g.copy())
    opt.step()


@pytest.mark.parametrize(("name", "index", "opt_name"), CASES)
def test_rate_trajectory_matches_torch(name, index, opt_name):
    rng = np.random.default_rng(index)
    ours_opt, theirs_opt, ours, theirs = optimizer_pair(opt_name, rng)
    ours_s, theirs_s = make(ta, name, GRID[name][index], ours_opt), make(torch, name, GRID[name][index], theirs_opt)
    assert_groups_equal(ours_opt, theirs_opt, "after construction")
    steps = getattr(theirs_s, "total_steps", 31) - 1
    for step in range(steps):
        grads = [rng.standard_normal(p.shape) for p in ours]
        train_step(ours_opt, ours, ta, grads)
        train_step(theirs_opt, theirs, torch, grads)
        ours_s.step()
        theirs_s.step()
        assert ours_s.get_last_lr() == pytest.approx(theirs_s.get_last_lr(), rel=1e-12, abs=1e-15), step
        assert_groups_equal(ours_opt, theirs_opt, f"step {step}")
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.array, b.detach().numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("name", "index", "opt_name"), CASES[::2])
@pytest.mark.parametrize("direction", ["torch to tinyattn", "tinyattn to torch"])
def test_state_dict_resumes_in_the_other_library_through_the_file(name, index, opt_name, direction):
    rng = np.random.default_rng(100 + index)
    ours_opt, theirs_opt, _, _ = optimizer_pair(opt_name, rng)
    options = GRID[name][index]
    first_lib, then_lib = (torch, ta) if direction == "torch to tinyattn" else (ta, torch)
    first_opt, then_opt = (theirs_opt, ours_opt) if first_lib is torch else (ours_opt, theirs_opt)
    first = make(first_lib, name, options, first_opt)
    reference_opt = optimizer_pair(opt_name, np.random.default_rng(100 + index))[1]
    reference = make(torch, name, options, reference_opt)
    steps = getattr(reference, "total_steps", 31) - 1
    for _ in range(steps // 2):
        first_opt.step()
        first.step()
    buffer = io.BytesIO()
    first_lib.save({"optimizer": first_opt.state_dict(), "scheduler": first.state_dict()}, buffer)
    buffer.seek(0)
    saved = then_lib.load(buffer, weights_only=True)
    then = make(then_lib, name, options, then_opt)  # built first, then both loaded, as torch's docs do it
    then_opt.load_state_dict(saved["optimizer"])
    then.load_state_dict(saved["scheduler"])
    for _ in range(steps // 2):
        then_opt.step()
        then.step()
    for _ in range(steps // 2 * 2):
        reference_opt.step()
        reference.step()
    assert then.get_last_lr() == pytest.approx(reference.get_last_lr(), rel=1e-12)
    assert_groups_equal(then_opt, reference_opt, direction)


def test_two_schedulers_on_one_optimizer_compose_as_in_torch():
    def run(lib, opt):
        a = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
        b = lib.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
        rates = []
        for _ in range(15):
            opt.step()
            a.step()
            b.step()
            rates.append(opt.param_groups[0]["lr"])
        return rates

    ours_opt, theirs_opt, _, _ = optimizer_pair("SGD", np.random.default_rng(0))
    assert run(ta, ours_opt) == pytest.approx(run(torch, theirs_opt), rel=1e-12)


@pytest.mark.parametrize("milestones", [[3], [5, 9]])
def test_sequential_warmup_then_decay_matches_torch(milestones):
    def run(lib, opt):
        S = lib.optim.lr_scheduler
        parts = [S.LinearLR(opt, start_factor=0.1, total_iters=3), S.CosineAnnealingLR(opt, T_max=8)]
        if len(milestones) == 2:
            parts.append(S.ExponentialLR(opt, gamma=0.8))
        seq = S.SequentialLR(opt, parts, milestones=milestones)
        rates = [seq.get_last_lr()]
        for _ in range(20):
            opt.step()
            seq.step()
            rates.append(seq.get_last_lr())
        return rates, seq.state_dict()

    ours_opt, theirs_opt, _, _ = optimizer_pair("Adam", np.random.default_rng(0))
    (ours, ours_state), (theirs, theirs_state) = run(ta, ours_opt), run(torch, theirs_opt)
    assert np.allclose(ours, theirs, rtol=1e-12)
    assert set(ours_state) == set(theirs_state)
    assert [set(s) for s in ours_state["_schedulers"]] == [set(s) for s in theirs_state["_schedulers"]]


@pytest.mark.parametrize("options", [dict(), dict(mode="max", factor=0.5, patience=2, cooldown=1),
                                     dict(threshold_mode="abs", threshold=0.1, patience=0, min_lr=[0.02, 0.01])])
def test_reduce_on_plateau_follows_torch(options):
    rng = np.random.default_rng(4)
    metrics = np.cumsum(rng.standard_normal(40) * 0.3) + np.repeat([5.0, 3.0, 3.0, 2.0], 10)
    ours_opt, theirs_opt, _, _ = optimizer_pair("SGD", rng)
    ours = optim.lr_scheduler.ReduceLROnPlateau(ours_opt, **options)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs_opt, **options)
    for i, metric in enumerate(metrics):
        ours.step(ta.tensor(metric))
        theirs.step(torch.tensor(metric))
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12), i
        if i == 20:  # resume each from the other's state
            ours_state, theirs_state = ours.state_dict(), theirs.state_dict()
            assert set(ours_state) == set(theirs_state)
            ours.load_state_dict(theirs_state)
            theirs.load_state_dict(ours_state)
    assert min(ours.get_last_lr()) < 0.1  # the schedule did reduce


@pytest.mark.parametrize("name", list(GRID))
def test_state_dict_keys_are_torchs(name):
    ours_opt, theirs_opt, _, _ = optimizer_pair("SGD", np.random.default_rng(0))
    ours, theirs = make(ta, name, GRID[name][0], ours_opt), make(torch, name, GRID[name][0], theirs_opt)
    ours_opt.step()
    theirs_opt.step()
    ours.step()
    theirs.step()
    assert set(ours.state_dict()) == set(theirs.state_dict())


def test_lambda_state_keeps_a_callable_objects_attributes_only():
    ours_opt = optimizer_pair("SGD", np.random.default_rng(0))[0]
    warm = Warmup(4)
    sched = optim.lr_scheduler.LambdaLR(ours_opt, [decay, warm])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [None, {"steps": 4}]
    warm.steps = 99
    sched.load_state_dict(state)
    assert warm.steps == 4


def test_refusals():
    opt = optimizer_pair("SGD", np.random.default_rng(0))[0]
    S = optim.lr_scheduler
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        S.StepLR([], step_size=2)
    with pytest.raises(KeyError, match=r"'initial_lr' is not specified in param_groups\[0\]"):
        S.StepLR(opt, step_size=2, last_epoch=3)
    with pytest.raises(ValueError, match="total_steps OR"):
        S.OneCycleLR(opt, max_lr=1.0)
    one = S.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    one.step()
    one.step()
    with pytest.raises(ValueError, match="Tried to step 3 times. The specified number of total steps is 2"):
        one.step()
    with pytest.raises(ValueError, match="one milestone fewer"):
        S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(opt, 3)], milestones=[])
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(opt, factor=1.5)
    with pytest.raises(ValueError, match="start_factor must be in"):
        S.LinearLR(opt, start_factor=0.0)
    assert math.isclose(S.StepLR(optimizer_pair("SGD", np.random.default_rng(0))[0], 2).get_last_lr()[0], 0.1)
