"""The kernel rung's convolutions (issue 28): Triton kernels for ResNet-20's narrow 3x3
convolutions, checked against F.conv2d's arithmetic under Triton's interpreter on this
CPU (a real subprocess with TRITON_INTERPRET=1), and the switch that puts them in a
network, which changes nothing where they cannot run."""
import os
import subprocess
import sys

import pytest
import torch

from gpu_course.tracks.torch import conv_kernels as ck
from gpu_course.tracks.torch.models import get_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def interpreted(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "TRITON_INTERPRET": "1"})


def test_the_kernels_match_f_conv2d_pass_by_pass_under_the_interpreter():
    pytest.importorskip("triton", reason="the torch environment pins Triton (pyproject)")
    done = subprocess.run([sys.executable, "-m", "tools.conv_check"],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 * len(ck.CHECK_SHAPES) * 3 and all(line.endswith(": ok") for line in lines)
    assert "float16     (2, 16, 16, 8)  wgrad" in done.stdout


def test_a_switched_network_steps_as_conv2d_does_eager_and_compiled_to_one_graph():
    """A stage of ResNet-20's kind (two 16-channel blocks) with its convolutions switched:
    the same outputs and gradients as with Conv2d, channels last, in float32 (the
    interpreter's types); and torch.compile sees each pass as one opaque operator
    (torch.library), as it sees cuDNN's: one graph, no break, the same gradients."""
    pytest.importorskip("triton", reason="the torch environment pins Triton (pyproject)")
    done = interpreted(
        "import torch, torch._dynamo as dynamo\n"
        "from torch import nn\n"
        "from gpu_course.tracks.torch import conv_kernels as ck\n"
        "torch.manual_seed(0)\n"
        "def stage():\n"
        "    conv = lambda: nn.Conv2d(16, 16, 3, padding=1, bias=False)\n"
        "    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16),\n"
        "                         nn.ReLU(), conv(), nn.BatchNorm2d(16), nn.ReLU(), conv(),\n"
        "                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))\n"
        "ref = stage().to(memory_format=torch.channels_last)\n"
        "x = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last)\n"
        "for name, compiled in (('eager', False), ('compiled', True)):\n"
        "    mine = stage().to(memory_format=torch.channels_last)\n"
        "    mine.load_state_dict(ref.state_dict())\n"
        "    print('changed', ck.use_conv_kernels(mine))\n"
        "    if compiled:\n"
        "        seen = dynamo.explain(mine)(x)\n"
        "        print('graphs', seen.graph_count, seen.graph_break_count)\n"
        "        mine = torch.compile(mine, backend='aot_eager')\n"
        "    ref.zero_grad()\n"
        "    outs = [m(x) for m in (ref, mine)]\n"
        "    [o.square().mean().backward() for o in outs]\n"
        "    params = mine._orig_mod.parameters() if compiled else mine.parameters()\n"
        "    print(name, ((outs[0] - outs[1]).abs().max() / outs[0].abs().max()).item(),\n"
        "          max(((a.grad - b.grad).abs().max() / a.grad.abs().max()).item()\n"
        "              for a, b in zip(ref.parameters(), params)))\n"
        "print('kinds', sorted({type(m).__name__ for m in mine.modules() if 'Conv' in type(m).__name__}))\n")
    assert done.returncode == 0, done.stderr[-3000:]
    said = {}
    for line in done.stdout.splitlines():
        key, value = line.split(" ", 1)
        said.setdefault(key, value)
    assert said["changed"] == "2" and said["graphs"] == "1 0"
    for name in ("eager", "compiled"):
        out, grad = map(float, said[name].split())
        assert out < 1e-5 and grad < 1e-4, (name, out, grad)
    assert said["kinds"] == "['Conv2d', 'Conv3x3']"


def test_the_switch_takes_only_what_the_kernels_compute_and_changes_nothing_on_a_cpu():
    net = get_model("resnet20", 10)
    eligible = [m for m in net.modules() if ck.eligible(m)]
    assert len(eligible) == 16   # the stem (3 in) and the strided first convolutions are not
    assert ck.use_conv_kernels(net, channels=(32, 64)) == 10
    assert ck.use_conv_kernels(net, channels=(32, 64)) == 0   # once
    with pytest.raises(ValueError, match=r"channels=\(24,\): \[24\] not allowed; allowed: 16, 32, 64"):
        ck.use_conv_kernels(net, channels=(24,))
    strided = torch.nn.Conv2d(16, 16, 3, stride=2, padding=1, bias=False)
    biased = torch.nn.Conv2d(16, 16, 3, padding=1)
    assert not ck.eligible(strided) and not ck.eligible(biased)
    if not ck.INTERPRETED:   # without a GPU the switched network is the network it was
        ref = get_model("resnet20", 10)
        ref.load_state_dict(net.state_dict())
        x = torch.randn(2, 3, 32, 32)
        torch.testing.assert_close(net(x), ref(x), rtol=0, atol=0)


def test_a_run_asked_for_the_kernels_on_a_cpu_says_f_conv2d_ran_and_records_the_switch(tmp_path):
    from gpu_course import torch as gc
    cfg = gc.Experiment(name="kernels", engine="pytorch", model="resnet20", train_size=64,
                        test_size=32, epochs=1, batch_size=32, num_workers=0,
                        convolutions="triton", channels_last=True)
    run = gc.train(cfg, runs_dir=tmp_path, progress=False, verbose=False)
    assert run.status == "finished" and run.config["convolutions"] == "triton"
    assert run.meta["notes"]["conv_kernels"] == {"changed": 6, "ran": "F.conv2d (no GPU)"}
    assert "F.conv2d computes the convolutions" in str(run.meta)
