"""Lesson 13: the timing trap and sync points. The trap (`TRAP`: a clock that stops when the
calls return, one that waits for the device, CUDA events), the loss read every step against
once an epoch (`RUNS`), and on a GPU the lines that synced (`SYNCS`)."""
from __future__ import annotations

import pandas as pd

from ..analyse import anatomy, metrics
from ..analyse.profiling import sync_sites
from ..analyse.trap import EVENTS, TIMERS, WITH, WITHOUT, trap_pairs, trap_table, where  # noqa: F401
from ..show import report
from ..show.closing import Closing
from ..show.findings import Compare, Expect, Lesson, Outcome, Page, Where, judge, judge_table
from . import workers

SIZES = {
    "full": dict(model="resnet20", train_size=6_400, test_size=64, epochs=1, batch_size=64,
                 warmup_steps=5, num_workers=workers(),
                 repeats=2,             # each way of reading the loss trained this often, interleaved
                 trap_batch=512,        # images in the trap's blocks: the GPU the slower side
                 trap_steps=2,          # training steps in the trap's second block
                 passes=5, torch_threads=None),
    "smoke": dict(model="tiny", train_size=768, test_size=64, epochs=1, batch_size=32,
                  warmup_steps=2, num_workers=0, repeats=2, trap_batch=64, trap_steps=2,
                  passes=5, torch_threads=1),
    "check": dict(train_size=3_200),
}
OWN_SIZES = ("passes", "repeats", "torch_threads", "trap_batch", "trap_steps")
EACH_STEP, AT_THE_END = "each step", "at the end"   # the runs' notes: loss_read
GUARD = "loss_guard"   # exercise 13.1's note: whether the loop checked its loss on the host each step


def table(measured) -> pd.DataFrame:
    """The trap's table (`measured`: (block, timer, images, seconds) tuples) or the runs'."""
    measured = list(measured)
    trap = measured and isinstance(measured[0], tuple)
    return trap_table(measured) if trap else runs_table(measured)


def runs_table(runs) -> pd.DataFrame:
    """A row a run: how it read its loss, what its epochs' closing sync waited (seconds,
    share) and the median steady step by the host's clock and (on a GPU) by CUDA events."""
    runs = list(runs)
    frame = report.ladder_table(runs)
    report.put(frame, 1, "loss_read", [loss_read(r) for r in runs])
    frame["sync_s"] = [metrics.epochs_sum(r, "sync_s") for r in runs]
    frame["sync_share"] = [metrics.share(metrics.epochs_sum(r, "sync_s"),
                                         metrics.epochs_sum(r, "epoch_time_s")) for r in runs]
    frame["host_step_ms"] = [metrics.median_step_ms(r) for r in runs]
    frame["device_step_ms"] = [metrics.median_step_ms(r, device=True) for r in runs]
    return frame


def loss_read(run) -> str | None:
    """How the run's loop read its loss, as its notes say (EACH_STEP or AT_THE_END)."""
    return (run.meta.get("notes") or {}).get("loss_read")


PAGE = Page.of(__name__)   # the paragraphs: text/l13_sync_points.md
SYNC_GAP = Compare(varies=("timer",), gpu=Expect.FASTER, cpu=Expect.SAME,
                   means=PAGE.means("sync_gap"))
EVENTS_READ = PAGE.text("events_read")
EVENTS_GAP = Compare(varies=("timer",), gpu=Expect.SAME,
                     means=dict.fromkeys((Outcome.EXPECTED, Outcome.NONE, Outcome.OPPOSITE),
                                         EVENTS_READ))
TRAP = Lesson(
    compares=(SYNC_GAP, EVENTS_GAP), columns=PAGE.means("trap_columns", str),
    cpu=PAGE.means("trap_no_gpu", str))

RUNS = Lesson(
    compares=(Compare(varies=("loss_read",), gpu=Expect.SLOWER, cpu=Expect.SLOWER,
                      means=PAGE.means("loss_read")),),
    baseline={"loss_read": AT_THE_END},
    bound={anatomy.Bound.DATA: PAGE.means("data_bound", str)},
    columns=PAGE.means("columns", str),
    cpu=PAGE.means("runs_no_gpu", str))

SYNCS = Lesson(
    compares=(), columns=PAGE.means("sync_columns", str),
    empty=PAGE.text("no_syncs"), cpu=PAGE.text("syncs_no_gpu"))

_UNSET = object()   # syncs not passed at all (None: passed, with no GPU to watch)


def conclude(runs=None, trap=None, device=None, syncs=_UNSET) -> Closing:
    """trap= (the timed passes) on device= ("cpu", "cuda:0", "cpu(0)", "gpu(0)"): `TRAP`;
    syncs= (the warnings caught; None without a GPU): `SYNCS`; else the runs: `RUNS`."""
    if trap is not None:
        track, gpu = where(device)
        return judge_table(TRAP, trap_table(trap), (track, Where.GPU if gpu else Where.CPU),
                           trap_pairs(list(trap), {WITHOUT: SYNC_GAP, EVENTS: EVENTS_GAP}))
    if syncs is not _UNSET:
        table = pd.DataFrame(sync_sites(syncs or []), columns=["line", "calls"])
        return judge_table(SYNCS, table, ("pytorch", Where.CPU if syncs is None else Where.GPU))
    if runs is None:
        raise ValueError("none was passed: pass runs, trap= (timed passes, with device=) or syncs=")
    runs, ways = list(runs), {loss_read(r) for r in runs}
    if not {EACH_STEP, AT_THE_END} <= ways:
        raise ValueError(f"the runs' notes say loss_read={sorted(map(str, ways))}: pass runs of both "
                         f"{EACH_STEP!r} and {AT_THE_END!r}, each noted with rec.note(loss_read=...)")
    return judge(RUNS, runs, runs_table(runs))
