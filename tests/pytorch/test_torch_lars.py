import math

import pytest
import torch

from gpu_course.tracks.torch import LARS


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
    from gpu_course.tracks import torch as gc
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


class PerTensorLARS(torch.optim.Optimizer):
    """The per-parameter LARS the course shipped before the multi-tensor rewrite (issue
    16), kept here as the reference the new one must match."""

    def __init__(self, params, lr, momentum=0.9, weight_decay=0.0, eta=0.001,
                 exclude_1d=True, eps=1e-9):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      eta=eta, exclude_1d=exclude_1d, eps=eps))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if group["exclude_1d"] and p.ndim <= 1:
                    update = g * group["lr"]
                else:
                    wd = group["weight_decay"]
                    w_norm, g_norm = torch.linalg.vector_norm(p), torch.linalg.vector_norm(g)
                    trust = group["eta"] * w_norm / (g_norm + wd * w_norm + group["eps"])
                    trust = torch.where((w_norm > 0) & (g_norm > 0), trust, 1.0)
                    update = (g + wd * p) * (trust * group["lr"])
                state = self.state[p]
                if "velocity" not in state:
                    state["velocity"] = update.clone()
                else:
                    state["velocity"].mul_(group["momentum"]).add_(update)
                p.sub_(state["velocity"])


@pytest.mark.parametrize("lr_as_tensor", [False, True])
def test_multi_tensor_lars_matches_the_per_tensor_one_over_several_steps(lr_as_tensor):
    from gpu_course.tracks import torch as gc
    torch.manual_seed(0)
    net = gc.get_model("tiny")
    twin = gc.get_model("tiny")
    twin.load_state_dict(net.state_dict())
    with torch.no_grad():  # one zero layer: it keeps the global rate in both
        next(p for p in net.parameters() if p.ndim > 1).zero_()
        next(p for p in twin.parameters() if p.ndim > 1).zero_()
    kw = dict(momentum=0.9, weight_decay=5e-4, eta=0.1)
    ours = LARS(net.parameters(), lr=0.4, **kw)
    reference = PerTensorLARS(twin.parameters(), lr=0.4, **kw)
    x, y = torch.randn(16, 3, 32, 32), torch.arange(16) % 10
    for step in range(6):
        lr = 0.4 * (step + 1) / 6  # a changing rate, as under a schedule
        for opt, model in ((ours, net), (reference, twin)):
            opt.param_groups[0]["lr"] = torch.tensor(lr) if lr_as_tensor and opt is ours \
                else lr
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        for a, b in zip(net.parameters(), twin.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


def test_multi_tensor_lars_dispatches_a_fixed_number_of_operators():
    from gpu_course.tracks import torch as gc
    from tools.op_count import count_ops
    torch.manual_seed(0)
    counts = {}
    for name, make in (("multi-tensor", LARS), ("per-tensor", PerTensorLARS)):
        net = gc.get_model("resnet20")
        opt = make(net.parameters(), lr=0.1, weight_decay=5e-4, eta=0.1)
        for p in net.parameters():
            p.grad = torch.randn_like(p)
        opt.step()  # the first step creates the momentum buffers
        counts[name] = count_ops(opt.step).launching
    assert counts["multi-tensor"] <= 25 < 500 <= counts["per-tensor"], counts
