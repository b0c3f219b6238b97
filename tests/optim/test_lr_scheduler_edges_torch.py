"""Schedules at their edges, against torch: jumps with ``step(epoch)`` (the closed forms), schedulers
resumed with ``last_epoch``, OneCycleLR's argument checks and per-group momenta, ReduceLROnPlateau
around its thresholds, and SequentialLR's state dict in both directions."""

import io
import warnings

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.filterwarnings("ignore::UserWarning")]


def optimizers(name="SGD", groups=2):
    ours = [nn.Parameter(np.ones(2)) for _ in range(groups)]
    theirs = [torch.nn.Parameter(torch.ones(2)) for _ in range(groups)]
    kwargs = dict(lr=0.1, momentum=0.9) if name == "SGD" else dict(lr=0.1)
    make = lambda lib_optim, ps: getattr(lib_optim, name)(  # noqa: E731
        [{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(ps)], **kwargs)
    return make(optim, ours), make(torch.optim, theirs)


def rates(opt):
    return [g["lr"] for g in opt.param_groups]


CLOSED = [("StepLR", dict(step_size=3, gamma=0.5)), ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.5)),
          ("ExponentialLR", dict(gamma=0.8)), ("LinearLR", dict(start_factor=0.2, total_iters=6)),
          ("CosineAnnealingLR", dict(T_max=7, eta_min=0.01))]


@pytest.mark.parametrize(("name", "options"), CLOSED, ids=[c[0] for c in CLOSED])
def test_step_with_an_epoch_jumps_by_the_closed_form_as_torch(name, options):
    ours_opt, theirs_opt = optimizers()
    ours = getattr(optim.lr_scheduler, name)(ours_opt, **options)
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, **options)
    for epoch in [4, 0, 9, 2, 13, 5, 6]:
        ours.step(epoch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs.step(epoch)
        assert rates(ours_opt) == pytest.approx(rates(theirs_opt), rel=1e-12), (name, epoch)
        assert ours.last_epoch == theirs.last_epoch == epoch


@pytest.mark.parametrize(("name", "options"), CLOSED, ids=[c[0] for c in CLOSED])
@pytest.mark.parametrize("start", [1, 4, 11])
def test_a_scheduler_resumed_with_last_epoch_follows_torch(name, options, start):
    ours_opt, theirs_opt = optimizers()
    for opt in (ours_opt, theirs_opt):
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"]  # as a loaded optimizer state would have it
    ours = getattr(optim.lr_scheduler, name)(ours_opt, last_epoch=start, **options)
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, last_epoch=start, **options)
    for _ in range(10):
        assert rates(ours_opt) == pytest.approx(rates(theirs_opt), rel=1e-12), name
        ours.step()
        theirs.step()


ONE_CYCLE = [
    dict(max_lr=1.0, total_steps=1), dict(max_lr=1.0, total_steps=0), dict(max_lr=1.0, total_steps=2.0),
    dict(max_lr=1.0, epochs=1, steps_per_epoch=1), dict(max_lr=1.0, epochs=0, steps_per_epoch=3),
    dict(max_lr=1.0, epochs=2, steps_per_epoch=0), dict(max_lr=1.0, epochs=2), dict(max_lr=1.0, steps_per_epoch=2),
    dict(max_lr=1.0, epochs=2.0, steps_per_epoch=2), dict(max_lr=1.0, total_steps=10, pct_start=0.0),
    dict(max_lr=1.0, total_steps=10, pct_start=1.0), dict(max_lr=1.0, total_steps=10, pct_start=1.5),
    dict(max_lr=1.0, total_steps=10, pct_start=1), dict(max_lr=1.0, total_steps=10, anneal_strategy="exp"),
    dict(max_lr=[1.0], total_steps=10), dict(max_lr=[1.0, 2.0], total_steps=10, max_momentum=[0.9, 0.95],
                                             base_momentum=[0.8, 0.85]),
    dict(max_lr=1.0, total_steps=10, max_momentum=[0.9]),
]


@pytest.mark.parametrize("options", ONE_CYCLE, ids=repr)
@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_one_cycle_accepts_and_refuses_what_torch_does(options, name):
    ours_opt, theirs_opt = optimizers(name)
    try:
        theirs = torch.optim.lr_scheduler.OneCycleLR(theirs_opt, **options)
    except ValueError:
        with pytest.raises(ValueError):
            optim.lr_scheduler.OneCycleLR(ours_opt, **options)
        return
    ours = optim.lr_scheduler.OneCycleLR(ours_opt, **options)
    for _ in range(theirs.total_steps - 1):
        for a, b in zip(ours_opt.param_groups, theirs_opt.param_groups):
            assert a["lr"] == pytest.approx(b["lr"], rel=1e-12)
            for key in ("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum"):
                assert a[key] == pytest.approx(b[key]), key
            momentum = (lambda g: g["betas"][0]) if name == "Adam" else (lambda g: g["momentum"])
            assert momentum(a) == pytest.approx(momentum(b), rel=1e-12)
        ours.step()
        theirs.step()


def test_one_cycle_without_momentum_needs_no_momentum_and_refuses_an_optimizer_without_one():
    class Plain(optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, dict(lr=0.1))

    plain = Plain([nn.Parameter(np.ones(1))])
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        optim.lr_scheduler.OneCycleLR(plain, max_lr=1.0, total_steps=4)
    optim.lr_scheduler.OneCycleLR(plain, max_lr=1.0, total_steps=4, cycle_momentum=False)
    assert "momentum" not in plain.param_groups[0]


@pytest.mark.parametrize("seed", range(8))
def test_reduce_on_plateau_around_its_thresholds_follows_torch(seed):
    rng = np.random.default_rng(seed)
    mode, threshold_mode = ["min", "max"][seed % 2], ["rel", "abs"][seed // 2 % 2]
    options = dict(mode=mode, threshold_mode=threshold_mode, threshold=0.1, patience=int(rng.integers(0, 3)),
                   cooldown=int(rng.integers(0, 3)), factor=0.5, min_lr=[0.02, 0.05], eps=1e-3 if seed > 3 else 1e-8)
    # steps of ±(0.05 .. 0.15): around the 0.1 threshold, relative (from 1.0) or absolute
    metrics = 1.0 + np.cumsum(rng.choice([-1, 1], 60) * rng.uniform(0.05, 0.15, 60)) * (0.1 if seed % 3 else 1)
    ours_opt, theirs_opt = optimizers()
    ours = optim.lr_scheduler.ReduceLROnPlateau(ours_opt, **options)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs_opt, **options)
    for i, metric in enumerate(metrics):
        ours.step(float(metric))
        theirs.step(float(metric))
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12), i
        assert (ours.best, ours.num_bad_epochs, ours.cooldown_counter) == (
            pytest.approx(theirs.best), theirs.num_bad_epochs, theirs.cooldown_counter), i
    ours.optimizer.add_param_group({"params": [nn.Parameter(np.ones(1))], "lr": 0.1})
    with pytest.raises(ValueError, match="expected 3 min_lrs"):
        optim.lr_scheduler.ReduceLROnPlateau(ours.optimizer, min_lr=[0.1, 0.1])
    for bad, message in [(dict(mode="up"), "mode up is unknown"), (dict(threshold_mode="x"), "threshold mode x")]:
        with pytest.raises(ValueError, match=message):
            optim.lr_scheduler.ReduceLROnPlateau(ours_opt, **bad)


def test_reduce_on_plateau_follows_a_group_added_later_with_the_default_min_lr():
    ours_opt, theirs_opt = optimizers()
    ours = optim.lr_scheduler.ReduceLROnPlateau(ours_opt, patience=0, min_lr=0.07)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs_opt, patience=0, min_lr=0.07)
    ours_opt.add_param_group({"params": [nn.Parameter(np.ones(1))], "lr": 0.3})
    theirs_opt.add_param_group({"params": [torch.nn.Parameter(torch.ones(1))], "lr": 0.3})
    for metric in [1.0, 2.0, 3.0, 4.0, 5.0]:
        ours.step(metric)
        theirs.step(metric)
        assert rates(ours_opt) == pytest.approx(rates(theirs_opt), rel=1e-12)


@pytest.mark.parametrize("direction", ["tinyattn to torch", "torch to tinyattn"])
def test_sequential_state_resumes_in_the_other_library(direction):
    def make(lib, opt):
        S = lib.optim.lr_scheduler
        return S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=3),
                                    S.ExponentialLR(opt, gamma=0.8)], milestones=[4])

    ours_opt, theirs_opt = optimizers()
    first_lib, then_lib = (ta, torch) if direction == "tinyattn to torch" else (torch, ta)
    first_opt, then_opt = (ours_opt, theirs_opt) if first_lib is ta else (theirs_opt, ours_opt)
    reference_opt = optimizers()[1]
    reference = make(torch, reference_opt)
    first = make(first_lib, first_opt)
    for _ in range(6):
        first_opt.step()
        first.step()
    buffer = io.BytesIO()
    first_lib.save({"opt": first_opt.state_dict(), "sched": first.state_dict()}, buffer)
    buffer.seek(0)
    saved = then_lib.load(buffer, weights_only=True)
    then = make(then_lib, then_opt)
    then_opt.load_state_dict(saved["opt"])
    then.load_state_dict(saved["sched"])
    for _ in range(6):
        then_opt.step()
        then.step()
    for _ in range(12):
        reference_opt.step()
        reference.step()
    assert rates(then_opt) == pytest.approx(rates(reference_opt), rel=1e-12)
    assert then.get_last_lr() == pytest.approx(reference.get_last_lr(), rel=1e-12)
