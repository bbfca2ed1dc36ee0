import pytest
import torch

from gpu_course.tracks import torch as gc
from gpu_course.tracks.torch.optim import Signum


def step(opt, p, grad):
    p.grad = torch.tensor(grad)
    opt.step()
    return p.detach().tolist()


def test_signum_steps_by_the_sign_of_the_momentum():
    """By hand: m1 = 0.1*g1 = [0.1, -0.1] -> w = [1, 1] - 0.01*[1, -1];
    m2 = 0.9*m1 + 0.1*[-0.5, -2] = [0.04, -0.29]: the first weight keeps its direction
    (the momentum remembers), the second turns."""
    p = torch.nn.Parameter(torch.tensor([1.0, 1.0]))
    opt = Signum([p], lr=0.01, momentum=0.9)
    assert step(opt, p, [1.0, -1.0]) == pytest.approx([0.99, 1.01])
    assert step(opt, p, [-0.5, -2.0]) == pytest.approx([0.98, 1.02])


def test_signum_without_momentum_is_signsgd_and_ignores_the_gradients_size():
    p = torch.nn.Parameter(torch.tensor([1.0, 1.0, 1.0]))
    opt = Signum([p], lr=0.1, momentum=0.0)
    assert step(opt, p, [1e-6, -50.0, 0.0]) == pytest.approx([0.9, 1.1, 1.0])


def test_signum_weight_decay_both_kinds():
    p = torch.nn.Parameter(torch.tensor([2.0]))
    opt = Signum([p], lr=0.1, momentum=0.0, weight_decay=1.0)   # g + wd*w = -1 + 2 > 0
    assert step(opt, p, [-1.0]) == pytest.approx([1.9])
    p = torch.nn.Parameter(torch.tensor([2.0]))
    opt = Signum([p], lr=0.1, momentum=0.0, wd_lh=0.5)          # (1 - 0.05)*2 - 0.1
    assert step(opt, p, [1.0]) == pytest.approx([1.8])


def test_signum_is_the_configs_signum(small_cfg):
    net = gc.get_model("tiny")
    opt = gc.make_optimizer(net, small_cfg.replace(optimizer="signum", lr=0.001))
    assert isinstance(opt, Signum) and opt.param_groups[0]["lr"] == pytest.approx(0.001)
    with pytest.raises(ValueError, match="momentum"):
        Signum(net.parameters(), momentum=1.0)


def test_the_optimizer_a_notebooks_loop_builds_is_the_one_recorded(small_cfg):
    """Lesson 05's defect, guarded: the LARS the notebook builds is the one measured."""
    import torch.nn.functional as F
    parts = gc.build(small_cfg.replace(name="own optimizer", max_steps=2, optimizer="lars"))
    net, train_iter, val_iter, _ = parts
    opt = gc.Signum(net.parameters(), lr=0.001)   # deliberately not what build made
    with gc.record(parts, optimizer=opt, progress=False, verbose=False) as rec:
        for _ in rec.epochs():
            for x, y in rec.batches(train_iter):
                loss = F.cross_entropy(net(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                rec.step(len(y), loss=loss.detach())
            rec.end_epoch()
    recorded = rec.run.meta["ran"]["optimizer"]
    assert recorded["optimizer"] == "Signum" and recorded["lr"] == pytest.approx(0.001)
    assert opt.state  # it stepped
