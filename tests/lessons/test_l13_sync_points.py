"""Lesson 13's conclusions on fake timings and fake runs: the trap's wrong number beside the
right one (MXNet on a CPU, PyTorch on a CPU, a GPU with CUDA events, a launch-bound GPU),
the per-step loss read against the read at the end (a CPU, a GPU where it costs, a GPU
where it does not), the course's own rule read from the records, and the lines
`set_sync_debug_mode("warn")` names (a GPU branch no CPU takes)."""
import warnings

import pytest

from gpu_course.config import Experiment
from gpu_course.lessons import l13_sync_points as l13, sizes
from gpu_course.measure.harness import Harness, Output

W, S, E = l13.WITHOUT, l13.WITH, l13.EVENTS


def passes(block, images, without, with_sync, events=None):
    """The trap's passes of one block: (block, timer, images, seconds) per timer and pass."""
    out = []
    for i, (a, b) in enumerate(zip(without, with_sync)):
        out += [(block, W, images, a), (block, S, images, b)]
        if events is not None:
            out.append((block, E, images, events[i]))
    return out


def test_mxnet_on_a_cpu_queues_so_the_unsynced_clock_claims_a_speed_it_never_ran_at():
    trap = passes("forward pass", 64, [0.001, 0.0012, 0.0009], [0.020, 0.024, 0.022]) \
        + passes("2 training steps", 128, [0.005, 0.006, 0.005], [0.15, 0.16, 0.14])
    say = l13.conclude(trap=trap, device="cpu(0)")
    assert say.lines[0].text.startswith(
        "Forward pass: without a sync the clock read 1.00 ms, with one 22.0 ms (medians). The "
        "number without the sync claims 64,000 images/s against the 2,909 images/s the work "
        "really ran at, ×22.00, faster (×16.67–×26.67 over 3 timed passes each)")
    assert "(MXNet's engine queues operators on a CPU too)" in say.text
    assert say.text.count("the clock stopped when the work was queued") == 2
    assert "What waits for a GPU: the same two clocks where the host queues work for a GPU" \
        in say.text and "CUDA events around" not in say.text
    assert say.check() == []
    frame = l13.table(trap)
    assert list(frame["rung"]) == ["forward pass, without a sync", "forward pass, with a sync",
                                   "2 training steps, without a sync", "2 training steps, with a sync"]
    assert frame["pass_ms"].iloc[1] == pytest.approx(22.0) and frame["passes"].iloc[0] == 3


def test_pytorch_on_a_cpu_the_two_clocks_agree_and_the_gap_waits_for_a_gpu():
    trap = passes("forward pass", 64, [0.0600, 0.0700, 0.0650], [0.0601, 0.0701, 0.0651])
    say = l13.conclude(trap=trap, device="cpu")
    assert "×1.00, within noise" in say.text
    assert "The two agree: on a CPU PyTorch runs each operator before the call returns" in say.text
    assert "What waits for a GPU: the gap between the two clocks" in say.text
    assert say.check() == []


def test_on_a_gpu_the_gap_shows_and_cuda_events_time_the_device():
    trap = passes("forward pass", 512, [0.0010, 0.0011, 0.0010], [0.0040, 0.0042, 0.0041],
                  events=[0.0038, 0.0039, 0.0039])
    say = l13.conclude(trap=trap, device="cuda:0")
    assert "the clock stopped when the work was queued, not when it was done." in say.text
    assert "MXNet" not in say.text and "What waits for a GPU" not in say.text
    assert "CUDA events around the forward pass put it at 3.90 ms on the device, ×1.05" in say.text
    assert say.check() == []


def test_a_launch_bound_gpu_leaves_nothing_in_the_queue():
    trap = passes("forward pass", 64, [0.0030, 0.0035, 0.0032], [0.0031, 0.0036, 0.0033])
    say = l13.conclude(trap=trap, device="gpu(0)")
    assert "The two agree: the host took as long to issue the work as the GPU took" in say.text
    assert "What waits for a GPU" not in say.text


def test_mxnet_on_a_cpu_with_nothing_left_queued_says_the_queue_shows_with_more_work():
    trap = passes("forward pass", 64, [0.0200, 0.0220, 0.0210], [0.0201, 0.0221, 0.0211])
    text = l13.conclude(trap=trap, device="cpu(0)").text
    assert "The two agree: MXNet's engine finished the work about as soon as it was queued" in text


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
            if read == l13.AT_THE_END:
                run.epochs["sync_s"] = sync_s
            if device_s is not None:
                run.steps["device_s"] = device_s
            runs.append(run)
    return runs


def test_gluon_on_a_cpu_the_read_costs_nothing_and_the_wait_moves_into_the_loader(make_run):
    runs = loops(make_run, 500, 505, waits=(0.9, 0.4), sync_s=0.03)
    say = l13.conclude(runs)
    assert "Reading the loss each step (loss.mean().asscalar()) against reading it once" in say.text
    assert "within noise" in say.text and "On a CPU the host and MXNet's engine share" in say.text
    assert "The waiting did not vanish, it moved: without the per-step read each run spent at " \
        "least" in say.text and "The loader runs in this process (num_workers=0)" in say.text
    assert "it waited 0.09 s for work still queued when the last step returned, which a" \
        in say.text   # 3 epochs of 0.03 s: under 0.1% of their time is not worth a number
    assert "What waits for a GPU: the per-step read's cost beyond noise" in say.text
    assert "set_sync_debug_mode" not in say.text
    assert say.check() == []
    frame = l13.table(runs)
    assert list(frame["loss_read"]) == [l13.AT_THE_END, l13.EACH_STEP] * 2
    assert frame["sync_s"].iloc[0] == pytest.approx(0.09) and frame["sync_s"].iloc[1] == 0


def test_a_loader_in_other_processes_gets_no_word_on_why_and_no_move_no_sentence(make_run):
    text = l13.conclude(loops(make_run, 500, 505, waits=(0.9, 0.4), workers=2)).text
    assert "it moved" in text and "in this process" not in text
    assert "it moved" not in l13.conclude(loops(make_run, 500, 505, waits=(0.4, 0.4))).text
    # a few percent more waiting is no move worth a sentence
    assert "it moved" not in l13.conclude(loops(make_run, 500, 505, waits=(0.04, 0.01))).text


def test_gluon_on_a_cpu_where_the_read_costs_the_engine_waits_for_the_host(make_run):
    say = l13.conclude(loops(make_run, 80, 50, sync_s=20.0, workers=2))
    assert "a slow-down" in say.text and "Each read stops the host until MXNet's engine threads " \
        "have finished the step, and they then wait while the host fetches" in say.text
    assert "What waits for a GPU: the per-step read's cost against a GPU (the host stops" in say.text
    assert say.check() == []


def test_pytorch_on_a_cpu_passes_no_sync_and_names_the_debug_mode_as_waiting(make_run):
    say = l13.conclude(loops(make_run, 500, 498, engine="pytorch"))
    assert "(loss.item())" in say.text and "so .item() has nothing to wait for" in say.text
    assert "on a CPU the loop passes sync=None, as every step is done when it returns: " \
        "'loss read at the end' waited 0 s at the end of its epochs." in say.text
    assert "; and torch.cuda.set_sync_debug_mode('warn') naming the line that syncs." in say.text
    assert "moved" not in say.text and say.check() == []


def test_on_a_gpu_the_per_step_read_is_a_slow_down_and_the_steps_are_timed_by_events(make_run):
    runs = loops(make_run, 3000, 2100, engine="pytorch", gpus=1, sync_s=0.004, device_s=0.02)
    say = l13.conclude(runs)
    assert "×0.70, a slow-down" in say.text and "until the device has finished the step, and it " \
        "then waits" in say.text and "the two take turns instead of overlapping" in say.text
    assert "it waited 0.012 s for work still queued" in say.text
    runs[0].epochs["sync_s"] = 2.0
    assert "it waited 6.00 s for work still queued when the last step returned, 11.2% of the " \
        "epoch, which a timer stopped without it would have missed" in l13.conclude(runs).text
    assert "a median steady step of 20.0 ms on the device, where the host's clock saw" in say.text
    assert "What waits for a GPU" not in say.text and say.check() == []


def test_on_a_gpu_a_read_that_costs_nothing_says_why(make_run):
    text = l13.conclude(loops(make_run, 3000, 3003, engine="pytorch", gpus=1)).text
    assert "no cost beyond noise here. The device finished each step before the host" in text
    assert "it found nothing still queued: 0 s." in text


def test_runs_without_the_loops_notes_are_refused(make_run):
    runs = [make_run("a", notes={"loss_read": l13.AT_THE_END}), make_run("b")]
    with pytest.raises(ValueError, match="rec.note"):
        l13.conclude(runs)
    with pytest.raises(ValueError, match="runs is empty"):
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
    assert [s["line"] for s in l13.sync_sites(caught)] == [2, 3]
    say = l13.conclude(syncs=caught)
    assert say.text == ("torch.cuda.set_sync_debug_mode('warn') named 2 lines that made the host "
                        "wait for the GPU: `print(f\"loss {loss.item():.3f}\")` (this notebook, "
                        "line 2, 3 calls); `x = y.cpu()` (this notebook, line 3, 1 call).")


def test_a_library_file_is_named_and_a_clean_loop_says_so(tmp_path):
    lib = tmp_path / "optimizer.py"
    lib.write_text("if found_inf.item():\n")
    assert "`if found_inf.item():` (optimizer.py, line 1, 1 call)" in l13.conclude(
        syncs=caught_at(lib, [1])).text
    assert "caught no syncing call in these steps" in l13.conclude(syncs=[]).text
    assert "no GPU here, so it has nothing to watch" in l13.conclude(syncs=None).text


def test_sizes():
    smoke, full = sizes("13", smoke=True), sizes("13", smoke=False)
    assert smoke.trap_batch < full.trap_batch and smoke["train_size"] < full["train_size"]
    assert smoke["model"] == "tiny" and smoke.repeats >= 2 and full.repeats >= 2
    with pytest.raises(ValueError, match="not a size"):
        sizes("13", pases=3)
