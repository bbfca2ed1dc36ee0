"""Lesson 12's Holistic Trace Analysis section: HTA and the course's trace_split on made-up
torch.profiler traces (the events HTA reads: ProfilerStep annotations, cpu_op and CUDA
runtime calls on the host, kernels, copies and memsets on a stream, tied by correlation
ids), one for each of the lesson's sentences, and on the committed H200 reference traces.
Each branch also runs on a table made by hand, so the sentences are tested where HTA is
not installed."""
import json

import pandas as pd
import pytest

from gpu_course.analyse import holistic as h
from gpu_course.lessons import l12_profilers as l12

needs_hta = pytest.mark.skipif(not h.installed(), reason="Holistic Trace Analysis is not "
                               "installed here (pyproject's `trace` extra: make setup)")


class Trace:
    """A one-process trace: host calls on pid 1, GPU events on device 0, stream 7."""

    def __init__(self):
        # correlation ids as large as a real trace's: HTA 0.5.0 downcasts them, and with
        # ids below 128 (int8) under pandas 3 it fails to store the event indices beside them
        self.events, self.correlation = [], 5000

    def host(self, name, ts, dur, cat="cpu_op", **args):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1,
                            "ts": float(ts), "dur": float(dur), "args": args})

    def step(self, k, ts, dur):
        self.host(f"ProfilerStep#{k}", ts, dur, "user_annotation")
        self.events.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{k}",
                            "pid": 0, "tid": 7, "ts": float(ts), "dur": float(dur), "args": {}})

    def launch(self, ts, dur, kernel_ts, kernel_dur, call="cudaLaunchKernel", cat="kernel",
               name="void conv_kernel<float>", tied=True):
        """A runtime call on the host and the GPU event it launched, tied by correlation."""
        self.correlation += 1
        self.host(call, ts, dur, "cuda_runtime", correlation=self.correlation)
        self.gpu(kernel_ts, kernel_dur, cat, name,
                 self.correlation if tied else self.correlation + 10_000)

    def gpu(self, ts, dur, cat="kernel", name="void conv_kernel<float>", correlation=0):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7,
                            "ts": float(ts), "dur": float(dur), "args": {"device": 0, "stream": 7,
                                                 "correlation": correlation}})

    def write(self, path):
        path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": self.events}))
        return path


def host_bound(tmp_path, file="host.json", untied=False, **launch):
    """Three 1000 µs steps: a 100 µs data wait, then a 30 µs launch call every 40 µs,
    each for a 5 µs kernel that starts 2 µs after its call ends: the GPU waits for the host.
    untied: only each step's first kernel carries its launch's correlation id."""
    t = Trace()
    for k in range(3):
        start = 1000 * k
        t.step(k, start, 1000)
        t.host("data wait", start, 100, "user_annotation")
        for i in range(20):
            call = start + 100 + 40 * i
            t.launch(call, 30, call + 32, 5, tied=not untied or i == 0, **launch)
    return t.write(tmp_path / file)


def queued(tmp_path, file="queued.json", graph=True, kernel_us=20.0, gap_us=3.0, tail_us=0.0):
    """Three steps, each one launch call (a CUDA graph replay, or 50 per-kernel calls at
    the step's start) for 50 back-to-back kernels `gap_us` apart: the host is ahead."""
    t = Trace()
    per_step = 50 * (kernel_us + gap_us) + 20 + tail_us
    for k in range(3):
        start = k * per_step
        t.step(k, start, per_step)
        first = start + 15
        for i in range(50):
            at = first + i * (kernel_us + gap_us)
            if graph:
                if i == 0:
                    t.correlation += 1
                    t.host("cudaGraphLaunch", start + 1, 10, "cuda_runtime",
                           correlation=t.correlation)
                t.gpu(at, kernel_us, correlation=t.correlation)
            else:
                t.launch(start + 1 + 0.2 * i, 0.1, at, kernel_us)
    return t.write(tmp_path / file)


def said(table):
    say = l12.conclude(None, hta=table)
    assert say.check() == []
    return say.text


FLAGS = {}
for flag in l12.HTA.flags:
    FLAGS.setdefault(flag.column, {}).update(flag.means)


# -- on made-up traces, through HTA ---------------------------------------------------------------
@needs_hta
def test_a_host_bound_trace_agrees_names_host_wait_and_the_launch_statistics(tmp_path):
    table = h.compare({"eager": host_bound(tmp_path)})
    cell = dict(zip(table["reading"], table["eager: HTA"]))
    assert cell[h.STEPS] == 3 and cell[h.LAUNCHES] == 60 and cell[h.DELAY] == 2
    assert cell[h.SHORTER] == 100 and cell[h.HOST_WAIT] > 90
    assert h.idle_reason(table, "eager") is None
    text = said(table)
    assert "'eager': HTA and the course agree on the GPU's idle share (HTA (%) 89.2;" in text
    assert "'eager': most of HTA's idle time is host wait (its share of idle (%) 100)." in text
    assert "'eager': the course agrees that the host sets the pace" in text
    assert ("'eager': per-kernel launch calls, most kernels shorter than their call (calls 60; "
            "median delay, call to kernel (µs) 2.00; median call (µs) 30.0; kernels "
            "shorter than their call (%) 100") in text
    assert FLAGS["launches"][h.Launches.COSTLY] in text


@needs_hta
def test_a_cuda_graph_trace_has_kernel_wait_and_no_per_kernel_launches(tmp_path):
    table = h.compare({"graph": queued(tmp_path)})
    text = said(table)
    assert "'graph': most of HTA's idle time is kernel wait (its share of idle (%) 90.6; " \
           "kernel wait: gaps under (µs) 30)." in text
    assert "'graph': the course agrees that the host is not the limit" in text
    assert "CUDA graph launches ran every kernel (calls 0; CUDA graph launches 3)." in text


@needs_hta
def test_short_kernels_off_the_microsecond_lose_kernel_time_to_hta_rounding(tmp_path):
    """1.5 µs kernels starting half-way through a µs: HTA keeps 1 µs of each."""
    table = h.compare({"tiny": queued(tmp_path, graph=False, kernel_us=1.5, gap_us=0.5)})
    assert h.idle_reason(table, "tiny") is h.Reason.ROUNDING
    text = said(table)
    assert "'tiny': HTA and the course disagree on the GPU's idle share" in text
    assert l12.ROUNDING in text and "rounding up to (µs an event) 2; GPU events 150" in text
    assert "'tiny': most of HTA's idle time is kernel wait" in text


@needs_hta
def test_host_time_after_the_last_kernel_is_idle_only_in_the_course_window(tmp_path):
    table = h.compare({"tail": queued(tmp_path, tail_us=1500)})
    assert h.idle_reason(table, "tail") is h.Reason.WINDOW
    assert FLAGS["why"][h.WHY[h.Reason.WINDOW]] in said(table)


@needs_hta
def test_kernels_hta_cannot_tie_to_a_launch_are_left_out(tmp_path):
    table = h.compare({"untied": host_bound(tmp_path, untied=True)})
    assert h.idle_reason(table, "untied") is h.Reason.EVENTS
    assert "'untied': they read different GPU events (HTA kept 3; the course 60)." in said(table)


@needs_hta
def test_a_kernel_named_as_a_copy_is_a_copy_for_hta_and_a_kernel_for_the_course(tmp_path):
    table = h.compare({"named": host_bound(tmp_path, name="Memcpy DtoD (Device -> Device)")})
    assert not h.copies_agree(table, "named")
    assert FLAGS["copies"][h.COPIES_APART] in said(table)


@needs_hta
def test_the_h200_reference_traces():
    """The numbers the lesson shows: HTA and the course agree on the naive trace's idle
    share; on the tuned one (a CUDA graph of many short kernels) HTA's rounding differs."""
    table = h.compare(h.REFERENCE_TRACES)
    assert h.traces_of(table) == ["naive", "tuned"]
    naive, tuned = (dict(zip(table["reading"], table[f"{n}: HTA"])) for n in ("naive", "tuned"))
    assert naive[h.STEPS] == tuned[h.STEPS] == 3 and naive[h.LAUNCHES] > 500
    assert naive[h.HOST_WAIT] > 50 and tuned[h.LAUNCHES] == 0
    assert h.idle_reason(table, "naive") is None
    assert h.idle_reason(table, "tuned") is h.Reason.ROUNDING
    text = said(table)
    assert "'naive': HTA and the course agree" in text and "CUDA graph launches 3" in text


# -- every branch on tables made by hand (no HTA needed) --------------------------------------------
def made(hta=None, course=None, name="t"):
    """A compare table for one trace: a host-bound eager trace unless told otherwise."""
    theirs = {h.STEPS: 3, h.WINDOW: 40.0, h.IDLE: 85.0, h.COMPUTE: 14.0, h.COPIES: 1.0,
              h.KERNEL_MS: 5.6, h.KERNELS: 900, h.HOST_WAIT: 90.0, h.KERNEL_WAIT: 8.0,
              h.OTHER_WAIT: 2.0, h.LAUNCHES: 900, h.DELAY: 3.0, h.CALL: 5.0, h.SHORTER: 40.0,
              **(hta or {})}
    mine = {h.STEPS: 3, h.WINDOW: 42.0, h.IDLE: 84.0, h.COMPUTE: 15.0, h.COPIES: 1.0,
            h.KERNEL_MS: 6.3, h.KERNELS: 900, h.GRAPH_LAUNCHES: 0, h.HOST_LAUNCH: 7.0,
            h.HOST_SYNC: 0.1, **(course or {})}
    mine.setdefault(h.IDLE_ON_HTA, h.idle_on_window(mine, theirs[h.WINDOW]))
    return pd.DataFrame({"reading": h.READINGS,
                         f"{name}: HTA": pd.Series([theirs.get(r, h.NAN) for r in h.READINGS],
                                                   dtype=object),
                         f"{name}: course": pd.Series([mine.get(r, h.NAN) for r in h.READINGS],
                                                      dtype=object)})


def test_agreeing_idle_shares_and_a_launch_count_below_half_shorter():
    text = said(made())
    assert "'t': HTA and the course agree on the GPU's idle share (HTA (%) 85.0; of its " \
           "window, first kernel to last (ms) 40.0; the course (%) 84.0" in text
    assert "kernels shorter than their call (%) 40.0" in text
    assert FLAGS["launches"][h.Launches.COSTLY] not in text


def test_different_events_are_named_first():
    table = made(hta={h.IDLE: 95.0, h.KERNELS: 600})
    assert h.idle_reason(table, "t") is h.Reason.EVENTS
    assert "(HTA kept 600; the course 900). HTA keeps only events it can tie" in said(table)


def test_the_window_explains_a_difference_when_the_course_idle_on_hta_window_agrees():
    table = made(hta={h.IDLE: 70.0, h.WINDOW: 20.0}, course={h.IDLE: 85.0, h.WINDOW: 40.0})
    assert h.idle_reason(table, "t") is h.Reason.WINDOW
    assert "(the course's idle over HTA's window (%) 70.0)." in said(table)


def test_rounding_explains_a_busy_time_gap_within_two_microseconds_an_event():
    table = made(hta={h.IDLE: 20.0, h.WINDOW: 19.0, h.KERNELS: 1300},
                 course={h.IDLE: 11.0, h.WINDOW: 19.0, h.KERNELS: 1300})
    assert h.idle_reason(table, "t") is h.Reason.ROUNDING
    assert "GPU events 1,300). " + l12.ROUNDING in said(table)


def test_a_busy_time_gap_beyond_rounding_is_left_to_the_timeline():
    table = made(hta={h.IDLE: 50.0, h.WINDOW: 40.0, h.KERNELS: 10},
                 course={h.IDLE: 20.0, h.WINDOW: 40.0, h.KERNELS: 10})
    assert h.idle_reason(table, "t") is h.Reason.OTHER
    assert FLAGS["why"][h.WHY[h.Reason.OTHER]] in said(table)


def test_a_host_wait_the_course_does_not_see_is_a_disagreement():
    text = said(made(course={h.HOST_LAUNCH: 1.0}))
    assert "'t': most of HTA's idle time is host wait" in text
    assert "'t': the course reads it otherwise: its launch calls take less than its kernels " \
           "(its launch calls on the host (ms) 1.00; its kernels (ms) 6.30). The course adds up" \
           in text


def test_no_idle_split_and_no_launches():
    text = said(made(hta={h.HOST_WAIT: h.NAN, h.LAUNCHES: 0}))
    assert "'t': HTA found no idle gaps to split." in text
    assert "'t': no launch calls tied to a GPU event (calls 0;" in text


def test_paragraphs_carry_no_number():
    from gpu_course.show import closing
    from declared import paragraphs
    assert all(closing.measurements(t) == [] for t in paragraphs(l12.HTA))


def test_bad_input_names_what_is_allowed(tmp_path):
    with pytest.raises(ValueError, match="names no trace"):
        h.compare({})
    with pytest.raises(ValueError, match="is not a file"):
        h.compare({"x": tmp_path / "missing.json"})
    with pytest.raises(ValueError, match="allowed: t"):
        h.idle_reason(made(), "other")


@needs_hta
def test_a_cpu_only_trace_is_refused_and_importing_hta_leaves_logging_alone(tmp_path):
    import logging
    root = logging.getLogger()
    before = root.level, list(root.handlers)
    t = Trace()
    t.step(0, 0, 100)
    t.host("aten::conv2d", 10, 50)
    with pytest.raises(ValueError, match="has no GPU events"):
        h.read(t.write(tmp_path / "cpu.json"))
    assert (root.level, list(root.handlers)) == before


@needs_hta
def test_without_its_rounding_hta_reads_the_course_idle_over_its_own_window(monkeypatch):
    """The tuned trace's reason checked: with HTA's whole-µs rounding turned off (its own
    switch), its idle share is the course's over HTA's window, on both H200 traces."""
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")
    table = h.compare(h.REFERENCE_TRACES)
    for name in ("naive", "tuned"):
        hta, mine = (dict(zip(table["reading"], table[f"{name}: {side}"]))
                     for side in ("HTA", "course"))
        assert hta[h.IDLE] == pytest.approx(mine[h.IDLE_ON_HTA], abs=0.01)
        assert hta[h.KERNEL_MS] == pytest.approx(mine[h.KERNEL_MS], abs=0.001)


@needs_hta
@pytest.mark.parametrize("text, says", [
    ('{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1', "is not a readable Chrome trace"),
    ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}]}', "lack a numeric ts or dur"),
])
def test_hta_refuses_a_damaged_trace_naming_the_file(tmp_path, text, says):
    """A trace cut short was a bare JSONDecodeError; one whose kernels lack a duration
    went to HTA as it was."""
    path = tmp_path / "damaged.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"{path}.*{says}"):
        h.read(path)
