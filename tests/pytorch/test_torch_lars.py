import math

import pytest
import torch

from gpu_course.torch import LARS


def test_one_step_matches_the_paper_by_hand():
    w = torch.nn.Parameter(torch.tensor([[3.0, 4.0]]))           # ||w|| = 5
    w.grad = torch.tensor([[0.6, 0.8]])                           # ||g|| = 1
    opt = LARS([w], lr=0.5, momentum=0.9, weight_decay=0.1, eta=0.01)
    opt.step()
    trust = 0.01 * 5 / (1 + 0.1 * 5)                              # eta ||w|| / (||g|| + wd ||w||)
    expected = [3.0 - 0.5 * trust * (0.6 + 0.1 * 3.0), 4.0 - 0.5 * trust * (0.8 + 0.1 * 4.0)]
    assert w.detach().flatten().tolist() == pytest.approx(expected, rel=1e-6)


def test_momentum_accumulates_the_scaled_updates():
    w = torch.nn.Parameter(torch.tensor([[1.0, 0.0]]))
    opt = LARS([w], lr=1.0, momentum=0.5, weight_decay=0.0, eta=1.0)
    w.grad = torch.tensor([[2.0, 0.0]])
    opt.step()                      # trust = 1 * 1 / 2 = 0.5: v = 1.0, w = 0
    assert w[0, 0].item() == pytest.approx(0.0)
    w.data = torch.tensor([[4.0, 0.0]])
    w.grad = torch.tensor([[1.0, 0.0]])
    opt.step()                      # trust = 4: v = 0.5 * 1.0 + 4 * 1.0 = 4.5
    assert w[0, 0].item() == pytest.approx(4.0 - 4.5)


def test_biases_and_batchnorm_get_plain_sgd_without_weight_decay():
    bias = torch.nn.Parameter(torch.tensor([2.0, -1.0]))
    bias.grad = torch.tensor([0.5, 0.5])
    LARS([bias], lr=0.1, momentum=0.0, weight_decay=0.5, eta=0.001).step()
    assert bias.detach().tolist() == pytest.approx([2.0 - 0.05, -1.0 - 0.05])
    adapted = torch.nn.Parameter(torch.tensor([2.0, -1.0]))
    adapted.grad = torch.tensor([0.5, 0.5])
    LARS([adapted], lr=0.1, momentum=0.0, weight_decay=0.0, eta=0.001,
         exclude_1d=False).step()
    trust = 0.001 * math.sqrt(5) / math.sqrt(0.5)
    assert adapted.detach().tolist() == pytest.approx([2.0 - 0.05 * trust, -1.0 - 0.05 * trust])


def test_zero_weights_keep_the_global_rate():
    w = torch.nn.Parameter(torch.zeros(2, 2))
    w.grad = torch.ones(2, 2)
    LARS([w], lr=0.1, momentum=0.0).step()
    assert torch.allclose(w, torch.full((2, 2), -0.1))


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match="eta"):
        LARS([torch.nn.Parameter(torch.ones(1))], lr=0.1, eta=-1)


def test_lars_trains_a_network(small_cfg):
    from gpu_course import torch as gc
    torch.manual_seed(0)
    net = gc.get_model("tiny")
    opt = gc.make_optimizer(net, small_cfg.replace(optimizer="lars", lr=1.0,
                                                   optimizer_params=(("eta", 0.02),)))
    assert isinstance(opt, LARS) and opt.defaults["eta"] == 0.02
    x, y = torch.randn(16, 3, 32, 32), torch.arange(16) % 10
    losses = []
    for _ in range(15):
        loss = torch.nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]  # it memorises the 16 images
