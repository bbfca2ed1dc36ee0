"""Lesson 13's conclusions on fake timings and fake runs: the trap's wrong number beside the
right one, the per-step loss read against the read at the end, the course's own rule read
from the records, and the lines `set_sync_debug_mode("warn")` names; each case the
paragraph the lesson declares for it, the GPU branches on fake GPU runs."""
import warnings

import pytest

from gpu_course.config import Experiment
from gpu_course.lessons import l13_sync_points as l13, sizes
from gpu_course.measure.harness import Harness, Output
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Outcome, Where

W, S, E = l13.WITHOUT, l13.WITH, l13.EVENTS
GAP, RUNS = l13.SYNC_GAP.means, l13.RUNS.compares[0].means


def passes(block, images, without, with_sync, events=None):
    """The trap's passes of one block: (block, timer, images, seconds) per timer and pass."""
    out = []
    for i, (a, b) in enumerate(zip(without, with_sync)):
        out += [(block, W, images, a), (block, S, images, b)]
        if events is not None:
            out.append((block, E, images, events[i]))
    return out


QUEUED = ([0.001, 0.0012, 0.0009], [0.020, 0.024, 0.022])   # the clock stops when queued
AGREE = ([0.0600, 0.0700, 0.0650], [0.0601, 0.0701, 0.0651])   # nothing left in the queue
# (seconds without, with a sync), the device -> the paragraph the lesson declares for it
TRAPS = [
    (QUEUED, "cpu(0)", GAP[Outcome.OPPOSITE][("gluon", Where.CPU)]),
    (QUEUED, "cuda:0", GAP[Outcome.EXPECTED][Where.GPU]),
    (AGREE, "cpu", GAP[Outcome.EXPECTED][("pytorch", Where.CPU)]),
    (AGREE, "cpu(0)", GAP[Outcome.EXPECTED][("gluon", Where.CPU)]),
    (AGREE, "gpu(0)", GAP[Outcome.NONE]),
]


@pytest.mark.parametrize("seconds, device, paragraph", TRAPS)
def test_each_trap_says_the_paragraph_the_lesson_declares(seconds, device, paragraph):
    say = l13.conclude(trap=passes("forward pass", 64, *seconds), device=device)
    assert say.text.startswith("'forward pass, without a sync' against 'forward pass, with a "
                               "sync': ×")
    assert paragraph in say.text and say.check() == []
    assert "Milliseconds a pass, the median of the timed passes: 'forward pass, without a " \
        "sync'" in say.text
    assert ("No GPU here" in say.text) == device.startswith("cpu")


def test_the_trap_cites_both_clocks_and_says_each_paragraph_once():
    trap = passes("forward pass", 64, *QUEUED) + \
        passes("2 training steps", 128, [0.005, 0.006, 0.005], [0.15, 0.16, 0.14])
    say = l13.conclude(trap=trap, device="cpu(0)")
    assert say.lines[0] == ("'forward pass, without a sync' against 'forward pass, with a "
                                 "sync': ×22.00, faster (×16.67–×26.67 over 3 timed passes "
                                 "each).")
    assert "'forward pass, with a sync' 22.0" in say.text and "'forward pass, with a sync' 2,909" \
        in say.text
    assert say.text.count("MXNet's engine queues operators on a CPU too") == 1
    assert "the host queues the work for the GPU instead of the engine's CPU threads" \
        in say.text and "What waits" not in say.text
    frame = l13.table(trap)
    assert list(frame["rung"]) == ["forward pass, without a sync", "forward pass, with a sync",
                                   "2 training steps, without a sync", "2 training steps, with a sync"]
    assert frame["pass_ms"].iloc[1] == pytest.approx(22.0) and frame["passes"].iloc[0] == 3


def test_on_a_gpu_cuda_events_time_the_device_against_the_clock_with_a_sync():
    trap = passes("forward pass", 512, [0.0010, 0.0011, 0.0010], [0.0040, 0.0042, 0.0041],
                  events=[0.0038, 0.0039, 0.0039])
    say = l13.conclude(trap=trap, device="cuda:0")
    assert "'forward pass, CUDA events' against 'forward pass, with a sync': ×1.05" in say.text
    assert l13.EVENTS_READ in say.text and "'forward pass, CUDA events' 3.90" in say.text
    assert "MXNet" not in say.text and "no GPU" not in say.text and say.check() == []


def test_the_trap_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="needs both timers"):
        l13.conclude(trap=[("forward pass", W, 64, 0.001)], device="cpu")
    with pytest.raises(ValueError, match="timer='no sync'; allowed"):
        l13.table([("forward pass", "no sync", 64, 0.001)])
    with pytest.raises(ValueError, match="must be a time"):
        l13.table([("forward pass", W, 64, float("nan"))])
    with pytest.raises(ValueError, match="device= is needed"):
        l13.conclude(trap=passes("forward pass", 64, [0.001], [0.002]), device="")


def test_where_reads_the_track_and_the_device_from_the_framework_s_name():
    assert l13.where("cpu(0)") == ("gluon", False) and l13.where("gpu(1)") == ("gluon", True)
    assert l13.where("cpu") == ("pytorch", False) and l13.where("cuda:0") == ("pytorch", True)


# -- the runs -----------------------------------------------------------------------------------
def loops(make_run, end, each, engine="gluon", gpus=0, waits=(0.1, 0.1), repeats=2,
          sync_s=0.0, device_s=None, workers=0):
    """The two loops trained `repeats` times, interleaved; the loss read at the end (rate
    `end`) or each step (rate `each`)."""
    runs = []
    for r in range(repeats):
        for read, rate, wait in ((l13.AT_THE_END, end, waits[0]), (l13.EACH_STEP, each, waits[1])):
            run = make_run(f"loss read {read}", rate=rate * (1 + 0.002 * r), engine=engine,
                           gpus=gpus, data_wait_share=wait, notes={"loss_read": read},
                           config={"num_workers": workers})
            run.epochs["sync_s"] = sync_s if read == l13.AT_THE_END else 0.0
            if device_s is not None:
                run.steps["device_s"] = device_s
            runs.append(run)
    return runs


# (rate at the end, each step), track, GPUs -> the paragraph the lesson declares for it
READS = [
    ((80, 50), "gluon", 0, RUNS[Outcome.EXPECTED][("gluon", Where.CPU)]),
    ((500, 505), "gluon", 0, RUNS[Outcome.NONE][("gluon", Where.CPU)]),
    ((500, 498), "pytorch", 0, RUNS[Outcome.NONE][("pytorch", Where.CPU)]),
    ((3000, 2100), "pytorch", 1, RUNS[Outcome.EXPECTED][Where.GPU]),
    ((3000, 3003), "pytorch", 1, RUNS[Outcome.NONE][Where.GPU]),
    ((3000, 4500), "pytorch", 1, RUNS[Outcome.OPPOSITE]),
]


@pytest.mark.parametrize("rates, engine, gpus, paragraph", READS)
def test_each_read_says_the_paragraph_the_lesson_declares(make_run, rates, engine, gpus,
                                                          paragraph):
    say = l13.conclude(loops(make_run, *rates, engine=engine, gpus=gpus, sync_s=0.03))
    assert "'loss read each step' against 'loss read at the end': ×" in say.text
    assert paragraph in say.text and say.check() == []
    assert "two identical jobs" not in say.text
    assert ("No GPU here" in say.text) == (gpus == 0)


def test_the_course_s_own_sync_is_read_from_the_records(make_run):
    runs = loops(make_run, 3000, 2100, engine="pytorch", gpus=1, sync_s=0.004, device_s=0.02)
    say = l13.conclude(runs)
    assert "the record's only sync) waited for work still queued after the last step: what a " \
        "timer without it would miss: 'loss read at the end' 0.012" in say.text
    assert "Median steady step on the device in ms (CUDA events, read after the epoch's " \
        "sync): 'loss read at the end' 20.0" in say.text
    cpu = l13.conclude(loops(make_run, 500, 500, engine="pytorch")).text
    assert "Median steady step on the device" not in cpu
    assert "the loop passes sync=None to rec.end_epoch" in cpu
    assert "set_sync_debug_mode('warn') names the line that syncs" in cpu
    frame = l13.table(runs)
    assert list(frame["loss_read"]) == [l13.AT_THE_END, l13.EACH_STEP] * 2
    assert frame["sync_s"].iloc[0] == pytest.approx(0.012) and frame["sync_s"].iloc[1] == 0


def test_a_gluon_loop_without_the_read_that_waits_for_data_is_said_to_have_moved_the_wait(
        make_run):
    moved = l13.conclude(loops(make_run, 500, 505, waits=(0.9, 0.1))).text
    assert "'loss read at the end' was data-bound: where it waited longer than the per-step " \
        "loop (the shares below), the wait moved into fetching batches" in moved
    assert "Share of its steady time each run waited for a batch: 'loss read at the end' 90" \
        in moved
    assert "moved" not in l13.conclude(loops(make_run, 500, 505, waits=(0.1, 0.1))).text
    assert "moved" not in l13.conclude(loops(make_run, 500, 505, engine="pytorch",
                                             waits=(0.9, 0.1))).text


def test_runs_without_the_loops_notes_are_refused(make_run):
    runs = [make_run("a", notes={"loss_read": l13.AT_THE_END}), make_run("b")]
    with pytest.raises(ValueError, match="rec.note"):
        l13.conclude(runs)
    with pytest.raises(ValueError, match="pass runs of both"):
        l13.conclude([])
    with pytest.raises(ValueError, match="none was passed"):
        l13.conclude()


def test_the_harness_keeps_a_loop_s_note(tmp_path):
    cfg = Experiment(epochs=1, batch_size=4, warmup_steps=0, monitor_interval=0.01)
    with Harness(cfg, output=Output(runs_dir=tmp_path, progress=False, verbose=False)) as rec:
        rec.note(loss_read=l13.EACH_STEP)
        for _ in rec.epochs():
            for _ in rec.batches(range(3)):
                rec.step(4, loss=1.0)
            rec.end_epoch()
    assert l13.loss_read(rec.run) == l13.EACH_STEP


# -- set_sync_debug_mode -------------------------------------------------------------------------
def caught_at(path, lines, message="called a synchronizing CUDA operation"):
    return [warnings.WarningMessage(UserWarning(message), UserWarning, str(path), n) for n in lines]


def test_the_debug_mode_names_each_line_that_synced_most_calls_first(tmp_path):
    cell = tmp_path / "ipykernel_4242" / "123.py"
    cell.parent.mkdir()
    cell.write_text("out, loss = step()\nprint(f\"loss {loss.item():.3f}\")\nx = y.cpu()\n")
    caught = caught_at(cell, [2, 2, 2, 3]) + caught_at(cell, [1], message="something else")
    say = l13.conclude(syncs=caught)
    assert say.text == ("Calls that made the host wait for the GPU, by line, most first: "
                        "'`print(f\"loss {loss.item():.3f}\")` (this notebook, line 2)' 3, "
                        "'`x = y.cpu()` (this notebook, line 3)' 1.")


def test_a_library_file_is_named_and_a_clean_loop_and_no_gpu_say_so(tmp_path):
    lib = tmp_path / "optimizer.py"
    lib.write_text("if found_inf.item():\n")
    assert "'`if found_inf.item():` (optimizer.py, line 1)' 1" in l13.conclude(
        syncs=caught_at(lib, [1])).text
    assert l13.conclude(syncs=[]).text == l13.SYNCS.empty
    assert l13.conclude(syncs=None).text == l13.SYNCS.cpu


def test_the_lessons_paragraphs_carry_no_number():
    for lesson in (l13.TRAP, l13.RUNS, l13.SYNCS):
        assert all(not closing.measurements(p) for p in paragraphs(lesson))


def test_sizes():
    smoke, full = sizes("13", smoke=True), sizes("13", smoke=False)
    assert smoke.trap_batch < full.trap_batch and smoke["train_size"] < full["train_size"]
    assert smoke["model"] == "tiny" and smoke.repeats >= 2 and full.repeats >= 2
    with pytest.raises(ValueError, match="not a size"):
        sizes("13", pases=3)
