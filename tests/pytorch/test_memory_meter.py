"""Lesson 14's PyTorch meter: the parts counted from a model, the profiler's memory timeline
read on a CPU (its parts equal the counts), a run's record carrying the measurement and its
timeline, and the GPU's bookkeeping (the caching allocator, the snapshot) on a fake CUDA."""
import os
import sys

import pytest
import torch

from gpu_course.analyse import memory as m
from gpu_course.lessons import l14_memory as l14
from gpu_course.measure.provenance import Parts
from gpu_course.tracks import torch as gc
from gpu_course.tracks.torch import memory


def tiny_after_a_step(batch=8):
    torch.manual_seed(0)
    net = gc.get_model("tiny")
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.rand(batch, 3, 32, 32), torch.randint(0, 10, (batch,))
    memory.train_step(net, optimizer, x, y)
    return net, optimizer, x, y


class Rec:
    """What `measure` needs of gc.record's harness: notes, and a record with a folder."""

    def __init__(self, path=None):
        self.notes = {}
        self.record = type("Record", (), {"path": path})() if path else None

    def note(self, **values):
        self.notes.update(values)


def test_the_parts_are_counted_from_the_model_and_the_optimizer():
    net, optimizer, x, y = tiny_after_a_step()
    parts = memory.counted(net, optimizer, (x, y))
    params = sum(p.numel() for p in net.parameters()) * 4
    assert parts[m.Part.PARAMETERS] == params == parts[m.Part.GRADIENTS]
    assert parts[m.Part.OPTIMIZER] == params                 # one momentum buffer a parameter
    assert parts[m.Part.INPUT] == x.numel() * 4 + y.numel() * 8
    adam = torch.optim.Adam(net.parameters())
    memory.train_step(net, adam, x, y)
    assert memory.counted(net, adam)[m.Part.OPTIMIZER] >= 2 * params   # two moments (and steps)


def test_on_a_cpu_the_profiler_s_parts_equal_the_counts(tmp_path):
    net, optimizer, x, y = tiny_after_a_step()
    meter = memory.MemoryMeter(Parts(net, None, None, optimizer, [torch.device("cpu")], None))
    rec = Rec(tmp_path)
    out = meter.measure(rec, lambda: memory.train_step(net, optimizer, x, y), inputs=(x, y),
                        readings=2)
    assert rec.notes["memory"] is out and out["counter"] == m.Counter.PROFILER.value
    computed = out["computed"]
    for part in ("parameters", "optimizer state", "gradients"):
        assert out["most"][part] == [computed[part]] * 2, part
    assert out["held"][0] == pytest.approx(computed["parameters"] + computed["optimizer state"]
                                           + computed["input"], rel=0.02)
    assert out["peak"][0] > out["held"][0] + out["at_peak"]["activations"][0] * 0.9
    assert out["held_parts"] == ["parameters", "optimizer state", "input"]   # gradients freed
    assert out["files"] == [memory.TIMELINE] and (tmp_path / memory.TIMELINE).exists()
    assert out["allocator"] is None and out["device_total"] is None
    with pytest.raises(ValueError, match="readings=0 must be at least 1"):
        meter.measure(rec, lambda: None, readings=0)


def test_a_timeline_is_read_into_held_peak_and_parts():
    names = ["PARAMETER", "OPTIMIZER_STATE", "INPUT", "TEMPORARY", "ACTIVATION", "GRADIENT",
             "AUTOGRAD_DETAIL", None]
    sizes = [[0, 10, 10, 5, 0, 0, 0, 0, 0],        # what existed before the step
             [0, 10, 10, 5, 1, 50, 0, 4, 3],       # the forward pass's end: the peak
             [0, 10, 10, 5, 0, 0, 10, 0, 0]]       # the gradients made, the activations freed
    out = memory.read_timeline([[0, 1, 2], sizes], names)
    assert out["held"] == 25 and out["peak"] == 83
    assert out["at_peak"][m.Part.ACTIVATIONS] == 55 and out["at_peak"][m.Part.OTHER] == 3
    assert out["most"][m.Part.GRADIENTS] == 10 and out["at_peak"][m.Part.GRADIENTS] == 0
    assert memory.read_timeline([[0, 1], [[0, 1, 2], [0, 5, 6]]], [])["at_peak"] == {}
    assert memory.read_timeline([[], []])["peak"] == 0
    assert len(memory.categories()) == 8   # this PyTorch's categories, None last


def test_the_profiler_s_lines_stay_out_of_stderr(capfd):
    with memory.quiet_profiler():
        os.write(2, b"STAGE:2026-01-01 12:00:00 1:1 ActivityProfilerController.cpp:314] Completed\n")
    print("after", file=sys.stderr)
    err = capfd.readouterr().err
    assert "STAGE" not in err and "after" in err


def test_a_run_records_its_memory_and_the_lesson_reads_it(small_cfg):
    runs = [gc.memory_run(small_cfg.replace(name=f"batch {b}", batch_size=b, max_steps=2),
                          readings=1) for b in (8, 32)]
    use = m.memory_of(runs[1])
    assert use.batch == 32 and use.counter == m.Counter.PROFILER and use.sorted
    assert (runs[1].path / memory.TIMELINE).exists()
    assert m.memory_of(runs[0]).activations_mib < use.activations_mib
    say = l14.conclude(runs)
    assert "'batch 32' against 'batch 8', activations per image" in say.text and say.check() == []


def fake_cuda(monkeypatch, state: dict, stats: dict) -> None:
    """The CUDA allocator's counters as functions of `state` (allocated, peak)."""
    cuda = torch.cuda
    monkeypatch.setattr(cuda, "memory_allocated", lambda d=None: state["allocated"])
    monkeypatch.setattr(cuda, "max_memory_allocated", lambda d=None: state["peak"])
    monkeypatch.setattr(cuda, "reset_peak_memory_stats",
                        lambda d=None: state.update(peak=state["allocated"]))
    monkeypatch.setattr(cuda, "memory_reserved", lambda d=None: 4096)
    monkeypatch.setattr(cuda, "memory_stats", lambda d=None: stats)
    monkeypatch.setattr(cuda, "get_device_properties",
                        lambda d=None: type("P", (), {"total_memory": 80 * 2**30})())


def test_on_a_gpu_the_allocator_is_read_around_each_step_and_a_snapshot_kept(monkeypatch, tmp_path):
    """A fake CUDA: the allocator's counters as functions of what the step allocated."""
    state = {"allocated": 100, "peak": 100, "history": []}
    cuda = torch.cuda
    fake_cuda(monkeypatch, state, {"num_alloc_retries": 2})
    monkeypatch.setattr(cuda.memory, "_record_memory_history",
                        lambda enabled="all", **kw: state["history"].append(enabled))
    monkeypatch.setattr(cuda.memory, "_dump_snapshot",
                        lambda path: open(path, "wb").write(b"snapshot"))
    net, optimizer, x, y = tiny_after_a_step()
    meter = memory.MemoryMeter(Parts(net, None, None, optimizer, [torch.device("cuda:0")], None))
    assert meter.cuda and meter.base == 100          # the net is not on this device: all of it

    def step():
        state["peak"] = max(state["peak"], state["allocated"] + 900)   # the step's activations
        state["allocated"] += 10                                     # and a little it keeps
    timeline = {"held": 5, "peak": 7, "at_peak": {m.Part.ACTIVATIONS: 2}, "most": {}}
    monkeypatch.setattr(meter, "_profiled",
                        lambda fn, path: (fn(), path.write_text("[[], []]"), timeline)[2])
    out = meter.measure(Rec(tmp_path), step, readings=2)
    assert out["counter"] == m.Counter.CUDA.value and out["held"] == [0, 10]
    assert out["peak"] == [900, 910] and out["allocator"] == {"peak": [900, 910],
                                                              "reserved": 4096, "retries": 2}
    assert out["at_peak"] == {"activations": [2, 2]} and out["device_total"] == 80 * 2**30
    assert state["history"] == ["all", None]            # recorded for the last step, then off
    assert out["files"] == [memory.SNAPSHOT, memory.TIMELINE]
    assert (tmp_path / memory.SNAPSHOT).read_bytes() == b"snapshot"
    # a profiler that cannot sort a device's memory leaves the allocator's reading standing
    meter._profiled = memory.MemoryMeter._profiled.__get__(meter)
    monkeypatch.setattr(memory, "profile", lambda **kw: _Broken())
    (tmp_path / memory.TIMELINE).unlink()
    out = meter.measure(Rec(tmp_path), step, readings=1)
    assert out["at_peak"] == {} and out["peak"] and memory.TIMELINE not in out["files"]


def test_the_profiled_step_runs_its_backward_on_the_calling_thread(tmp_path):
    """On a GPU autograd's device thread would run a checkpointed segment's recomputation,
    which the profiler's stack tracer does not follow: the profiled step turns that off."""
    net, optimizer, x, y = tiny_after_a_step()
    meter = memory.MemoryMeter(Parts(net, None, None, optimizer, [torch.device("cpu")], None))
    seen = []

    def step():
        seen.append(torch.autograd.is_multithreading_enabled())
        memory.train_step(net, optimizer, x, y)
    meter.measure(Rec(tmp_path), step, readings=1)
    assert seen == [False] and torch.autograd.is_multithreading_enabled()


def test_a_profiler_failing_inside_a_gpu_step_leaves_the_allocator_s_reading(monkeypatch, tmp_path):
    """The H200's failure, faked: the profiled step raises SystemError in its backward; the
    step runs again without the profiler, its partial gradients cleared first, and the
    allocator's peak stands with the parts unsorted. On a CPU the same error is raised."""
    state = {"allocated": 100, "peak": 100, "calls": 0}
    cuda = torch.cuda
    fake_cuda(monkeypatch, state, {})
    monkeypatch.setattr(cuda.memory, "_record_memory_history", lambda enabled="all", **kw: None)
    monkeypatch.setattr(cuda.memory, "_dump_snapshot", lambda path: open(path, "wb").write(b"s"))
    monkeypatch.setattr(memory, "profile", lambda **kw: _Broken())
    net, optimizer, x, y = tiny_after_a_step()
    optimizer.zero_grad(set_to_none=True)
    meter = memory.MemoryMeter(Parts(net, None, None, optimizer, [torch.device("cuda:0")], None))
    grads_at_start = []

    def step():
        state["calls"] += 1
        grads_at_start.append(sum(p.grad is not None for p in net.parameters()))
        state["peak"] = max(state["peak"], state["allocated"] + 500 * state["calls"])
        if state["calls"] == 1:
            for p in net.parameters():
                p.grad = torch.zeros_like(p)          # half a backward's gradients
            raise SystemError("run_backward returned NULL without setting an exception")
    out = meter.measure(Rec(tmp_path), step, readings=1)
    assert state["calls"] == 2 and grads_at_start == [0, 0]
    assert out["peak"] == [1000] and out["at_peak"] == {}
    cpu = memory.MemoryMeter(Parts(net, None, None, optimizer, [torch.device("cpu")], None))
    state["calls"] = 0
    with pytest.raises(SystemError):
        cpu.measure(Rec(tmp_path), step, readings=1)


class _Broken:
    """A profiler whose memory timeline cannot be exported (as for a device it does not see)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def export_memory_timeline(self, path, device=None):
        raise RuntimeError(f"no memory events for {device}")


def test_a_batch_that_does_not_fit_returns_its_oom_record(small_cfg, monkeypatch):
    def full(*args):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.06 GiB")
    monkeypatch.setattr(memory, "train_step", full)
    run = gc.memory_run(small_cfg.replace(name="too large", max_steps=2), readings=1)
    assert run.status == "oom" and "batch_size=32 per device does not fit" in run.meta["error"]
    from gpu_course.lessons.exercises import check
    assert "'too large' ran out of device memory" in check("14.1", [run, run], 10.0).message
