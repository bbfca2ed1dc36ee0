"""The validation pass as one CUDA graph (a lever on the tuned rung): the same accuracy
as the eager pass, the same program every pass with no host read inside (what a graph
can replay), eagerly on the CPU and captured where a GPU is present (marker `gpu`)."""
import numpy as np
import pytest
import torch

from gpu_course.config import Experiment
from gpu_course.tracks import torch as gc
from gpu_course.tracks.torch.gpu_loader import Batches, GpuLoader
from gpu_course.tracks.torch.loop import evaluate
from gpu_course.tracks.torch.static_eval import StaticEval, check_static_eval


def _val(device="cpu", n=70, batch=32, channels_last=False, dtype=torch.float32, labels=None):
    """A validation loader whose last batch is short (70 = 32 + 32 + 6)."""
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    labels = np.arange(n) % 10 if labels is None else labels
    return GpuLoader(images, labels, Batches(batch, train=False, channels_last=channels_last,
                                             dtype=dtype), device)


def _net(device="cpu", seed=0):
    torch.manual_seed(seed)
    net = gc.get_model("tiny").to(device)
    with torch.no_grad():   # BatchNorm statistics away from their defaults: eval mode shows
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    return net


@pytest.mark.parametrize("amp", [None, torch.bfloat16])
def test_the_pass_counts_what_the_eager_evaluation_counts(amp):
    net, val = _net(), _val()
    net.train()
    dtype = "float32" if amp is None else "bfloat16"
    expected = evaluate(net, val, ["cpu"], dtype)
    evaluator = StaticEval(net, val, amp)
    assert evaluator.seen == 70 and len(evaluator.columns) == 3   # the short batch kept
    assert [evaluator.evaluate() for _ in range(3)] == [expected] * 3
    assert net.training   # put back as it was
    assert evaluator.graph is None and not evaluator.use_graph   # no GPU: no capture


def _say_class(net, k: int) -> None:
    """Every image is now called class k."""
    with torch.no_grad():
        net.output.bias.copy_(100 * torch.nn.functional.one_hot(torch.tensor(k), 10))


LABELS = np.array([0] * 10 + [1] * 60)   # class 0: 10 images, class 1: 60


def test_the_pass_reads_the_weights_as_they_are_at_each_call():
    net, val = _net(), _val(labels=LABELS)
    evaluator = StaticEval(net, val)
    _say_class(net, 0)
    assert evaluator.evaluate() == pytest.approx(10 / 70)
    _say_class(net, 1)
    assert evaluator.evaluate() == pytest.approx(60 / 70)


def test_every_pass_dispatches_the_same_program_with_no_host_read():
    evaluator = StaticEval(_net(), _val(channels_last=True))
    found = check_static_eval(evaluator, passes=2)
    assert found["differs"] == [] and found["syncs"] == 0 and found["host_tensors"] == [], found
    assert found["ops"] > 20 and found["devices"] == ["cpu"]


def test_a_training_loader_is_refused():
    rng = np.random.default_rng(0)
    train = GpuLoader(rng.integers(0, 256, (64, 32, 32, 3), dtype=np.uint8), np.arange(64) % 10,
                      Batches(32))
    with pytest.raises(ValueError, match="needs the validation loader"):
        StaticEval(_net(), train)


def test_the_config_refuses_graphed_eval_without_the_data_on_the_device():
    with pytest.raises(ValueError, match="graphed_eval=True needs data_on_gpu=True"):
        Experiment(engine="pytorch", graphed_eval=True)
    with pytest.raises(ValueError, match="graphed_eval=True has no effect with engine='gluon'"):
        Experiment(engine="gluon", graphed_eval=True)


def test_a_run_with_graphed_eval_says_it_ran_eagerly_here_and_matches_the_eager_run(small_cfg):
    cfg = small_cfg.replace(data_on_gpu=True, optimizer="lars", optimizer_params=(("eta", 0.1),),
                            epochs=2, dataset="synthetic")
    plain = gc.train(cfg, progress=False, verbose=False)
    graphed = gc.train(cfg.replace(graphed_eval=True), progress=False, verbose=False)
    assert graphed.status == "finished"
    assert graphed.meta["notes"]["graphed_eval"] == {"graph": False, "why": "no GPU"}
    assert any(d["field"] == "graphed_eval" and d["ran"] == "eager"
               for d in graphed.meta["downgrades"]), graphed.meta["downgrades"]
    assert list(graphed.epochs["val_acc"]) == list(plain.epochs["val_acc"])


# -- on a GPU -------------------------------------------------------------------------------
@pytest.mark.gpu
def test_the_captured_pass_replays_what_the_eager_pass_counts():
    net = _net("cuda").to(memory_format=torch.channels_last)
    val = _val("cuda", channels_last=True, dtype=torch.bfloat16, labels=LABELS)
    evaluator = StaticEval(net, val, torch.bfloat16)
    eager = [evaluator.evaluate()]           # the first pass: eager, on a side stream
    assert evaluator.graph is None
    eager.append(evaluator.evaluate())       # the second: captured, then replayed
    assert evaluator.graph is not None
    assert eager[1] == eager[0]
    _say_class(net, 0)                       # the replays read the live weights
    assert evaluator.evaluate() == pytest.approx(10 / 70)
    _say_class(net, 1)
    assert evaluator.evaluate() == pytest.approx(60 / 70)
    found = check_static_eval(evaluator)
    assert found["differs"] == [] and found["syncs"] == 0 and found["devices"] == ["cuda"]
