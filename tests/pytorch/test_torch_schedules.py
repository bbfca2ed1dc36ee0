import pytest
import torch
from torch.optim import lr_scheduler as sched

from gpu_course.tracks import torch as gc
from gpu_course.tracks.torch import LARS

STEPS = 4  # updates per epoch


@pytest.fixture
def cfg(small_cfg):
    return small_cfg.replace(epochs=4, lr=1.0)


def curve(cfg, **changes):
    return pytest.approx(gc.lr_curve(cfg.replace(**changes), STEPS), abs=1e-6)


def test_constant_and_warmup(cfg):
    assert gc.lr_curve(cfg, STEPS) == pytest.approx([1.0] * 16)
    # update k of the warm-up uses lr * (k + 1) / warmup_steps, as MXNet's warm-up does
    assert gc.lr_curve(cfg.replace(warmup_epochs=1), STEPS)[:6] == \
        pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0, 1.0])


def test_factor_is_steplr_counted_from_the_start(cfg):
    expected = [0.25, 0.5, 0.75, 1.0] + [0.5] * 4 + [0.25] * 4 + [0.125] * 4
    assert curve(cfg, lr_scheduler="factor", warmup_epochs=1) == expected   # LR_FACTOR 0.5
    every_two = [1.0] * 8 + [0.5] * 8
    assert curve(cfg, lr_scheduler="factor", lr_steps=(2,)) == every_two
    assert isinstance(gc.lr_scheduler(cfg.replace(lr_scheduler="factor"), STEPS), sched.StepLR)


def test_multifactor_is_multisteplr(cfg):
    expected = [1.0] * 8 + [0.5] * 4 + [0.25] * 4   # LR_FACTOR: the talk's 0.5
    assert curve(cfg, lr_scheduler="multifactor", lr_steps=(2, 3)) == expected
    scheduler = gc.lr_scheduler(cfg.replace(lr_scheduler="multifactor", lr_steps=(2, 3)), STEPS)
    assert isinstance(scheduler, sched.MultiStepLR)


def test_cosine_and_poly_start_after_the_warmup_and_end_near_zero(cfg):
    cosine = gc.lr_curve(cfg.replace(lr_scheduler="cosine", warmup_epochs=1), STEPS)
    assert cosine[:5] == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0])
    assert cosine[10] == pytest.approx(0.5)  # halfway through the 12 cosine updates
    assert cosine[-1] < 0.02 and all(a >= b for a, b in zip(cosine[3:], cosine[4:]))
    poly = gc.lr_curve(cfg.replace(lr_scheduler="poly", warmup_epochs=1), STEPS)
    assert poly[4:7] == pytest.approx([1.0, (11 / 12) ** 2, (10 / 12) ** 2])


def test_onecycle_rises_to_the_peak_then_anneals(cfg):
    lrs = gc.lr_curve(cfg.replace(lr_scheduler="onecycle", lr_base_batch=16), STEPS)
    peak = cfg.scaled_lr * 32 / 16  # linear scaling: batch 32 at a base of 16 doubles lr
    assert max(lrs) == pytest.approx(peak, rel=1e-3)
    assert lrs[0] == pytest.approx(peak / 25) and lrs[-1] < peak / 1000
    assert lrs.index(max(lrs)) == round(0.3 * 16) - 1


def test_scheduler_drives_the_training_optimizer(cfg):
    net = gc.get_model("tiny")
    opt = gc.make_optimizer(net, cfg.replace(optimizer="lars", warmup_epochs=1))
    scheduler = gc.lr_scheduler(cfg.replace(warmup_epochs=1), STEPS, opt)
    assert isinstance(opt, LARS) and opt.param_groups[0]["lr"] == pytest.approx(0.25)
    opt.step()
    scheduler.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5)


@pytest.mark.parametrize("name, kind", [("sgd", torch.optim.SGD), ("nag", torch.optim.SGD),
                                        ("adam", torch.optim.Adam), ("adamw", torch.optim.AdamW)])
def test_optimizers_by_name(cfg, name, kind):
    opt = gc.make_optimizer(gc.get_model("tiny"), cfg.replace(optimizer=name, lr_base_batch=64))
    assert isinstance(opt, kind)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5)  # 1.0 * 32 / 64
    assert opt.param_groups[0].get("nesterov", False) == (name == "nag")


def test_unknown_optimizer_params_are_a_value_error(cfg):
    with pytest.raises(ValueError, match="batch_scale"):
        gc.make_optimizer(gc.get_model("tiny"), cfg.replace(optimizer_params=(("batch_scale", 4),)))
