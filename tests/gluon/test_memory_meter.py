"""Lesson 14's Gluon meter: the parts counted from a model and its trainer, the process's
memory read around each step on a CPU (into a run's record, which the lesson reads), and
mx.context.gpu_memory_info's bookkeeping on a fake GPU."""
import mxnet as mx
import pytest
from mxnet import gluon

from gpu_course.analyse import memory as m
from gpu_course.lessons import l14_memory as l14
from gpu_course.measure import process_memory
from gpu_course.measure.provenance import Parts
from gpu_course.tracks import gluon as gc
from gpu_course.tracks.gluon import memory


def tiny_after_a_step(batch=8):
    net = gc.get_model("tiny")
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    x = mx.nd.random.uniform(shape=(batch, 3, 32, 32))
    y = mx.nd.random.randint(0, 10, shape=(batch,)).astype("float32")
    memory.train_step(net, trainer, x, y)
    mx.nd.waitall()
    return net, trainer, x, y


class Rec:
    def __init__(self):
        self.notes = {}

    def note(self, **values):
        self.notes.update(values)


def test_the_parts_are_counted_from_the_model_and_the_trainer():
    net, trainer, x, y = tiny_after_a_step()
    params = list(net.collect_params().values())
    learning = [p for p in params if p.grad_req != "null"]
    parts = memory.counted(net, trainer, (x, y))
    assert parts[m.Part.PARAMETERS] == 4 * sum(p.data().size for p in params)   # BatchNorm's stats too
    assert parts[m.Part.GRADIENTS] == 4 * sum(p.data().size for p in learning)
    assert parts[m.Part.OPTIMIZER] == parts[m.Part.GRADIENTS]   # one momentum buffer a learning one
    assert parts[m.Part.INPUT] == 4 * (x.size + y.size)
    fresh = gc.get_model("tiny")
    fresh.initialize()           # deferred: only the shapes known without an input (a bias)
    assert 0 < memory.counted(fresh, None)[m.Part.PARAMETERS] < parts[m.Part.PARAMETERS] / 100


@pytest.mark.skipif(not process_memory.available(), reason="needs Linux's /proc peak memory")
def test_on_a_cpu_the_process_memory_sees_the_step(small_cfg):
    runs = [gc.memory_run(small_cfg.replace(name=f"batch {b}", batch_size=b, max_steps=2),
                          readings=2) for b in (8, 32)]
    use = m.memory_of(runs[1])
    assert use.counter == m.Counter.PROCESS and not use.sorted and use.readings == 2
    assert use.held_parts == (m.Part.PARAMETERS, m.Part.GRADIENTS, m.Part.OPTIMIZER, m.Part.INPUT)
    assert use.held_mib * 2**20 >= use.held_computed() * 0.9
    assert use.activations_mib > 2 * m.memory_of(runs[0]).activations_mib   # 4 x the images
    say = l14.conclude(runs)
    assert "by the process's peak resident memory" in say.text and say.check() == []


def test_on_a_gpu_the_device_s_used_memory_is_read_around_each_step(monkeypatch):
    """A fake GPU: gpu_memory_info's free memory falls as MXNet's pool grows."""
    total, used = 16 * 2**30, [500]
    monkeypatch.setattr(mx.context, "gpu_memory_info", lambda i=0: (total - used[0], total))
    net, trainer, x, y = tiny_after_a_step()
    parts = Parts(net, None, None, trainer, [mx.gpu(0)], None)
    meter = memory.MemoryMeter(parts)
    # what the network holds already is not part of the base
    assert meter.gpu and meter.base == 500 - memory.nbytes(
        a for p in net.collect_params().values() for a in p.list_data() + (
            p.list_grad() if p.grad_req != "null" else []))

    def step():
        used[0] = 1500           # the pool grows in the first step, then serves the next
    out = meter.measure(Rec(), step, readings=2)
    assert out["counter"] == m.Counter.MXNET_GPU.value and out["device_total"] == total
    assert [p - h for p, h in zip(out["peak"], out["held"])] == [1000, 0]
    assert out["peak"] == [1500 - meter.base] * 2   # the pool's high-water mark
    assert out["at_peak"] == {} and out["allocator"] is None


def test_a_batch_that_does_not_fit_returns_its_oom_record(small_cfg, monkeypatch):
    def full(*args):
        raise mx.base.MXNetError("[12:00:00] src/storage/./pooled_storage_manager.h:161: "
                                 "cudaMalloc retry failed: out of memory")
    monkeypatch.setattr(memory, "train_step", full)
    run = gc.memory_run(small_cfg.replace(name="too large", max_steps=2), readings=1)
    assert run.status == "oom" and run.meta["error"]
