"""Lesson 08: the whole ladder, one coherent set of runs.

The summary reads the newest ladder that `gpu-course ladder` (or `make run`) wrote for the
track, `ladder-<engine>-<time>/` under the runs folder: every rung trained by one command on
one machine, each changing one thing on top of the rung before it. With none yet, the
notebook walks the ladder itself (`run_ladder`, quick in smoke mode, as `gpu-course ladder
--quick`). It never mixes runs of different lessons, networks or sizes into one ladder: the
table has a column for every setting that differs between its rows, and the sentences say
what the reference machine's ladder differs in.
"""
from __future__ import annotations

import math

import pandas as pd

from ..analyse import alike, metrics
from ..show import plots, report
from ..measure import records
from ..show.closing import Closing
from . import talk
from ..ladder import RUNG_SETTINGS, RungName

SIZES = {
    # the ladder's own sizes (ladder.default_sizes): full, or `gpu-course ladder --quick`;
    # aot_eager only traces (seconds on a CPU), inductor compiles (minutes on a CPU)
    "full": dict(quick=False, ladder_train_size=None, ladder_test_size=None,
                 compile_backend="inductor", ladder_rungs=None,
                 # exercise 08.1's runs: the ladder's rungs (None: all of ladder_rungs) on its
                 # own images (None) over one epoch, at its own batch and warm-up (None)
                 exercise_rungs=None, exercise_size=None, exercise_epochs=1, exercise_batch=None,
                 exercise_warmup_steps=None, exercise_torch_threads=None),
    # smoke: the first four rungs (naive, workers, data format, graph): the summary's code
    # path in a minute; the whole ladder is `make run`'s
    "smoke": dict(quick=True, ladder_train_size=512, ladder_test_size=256,
                  compile_backend="aot_eager", ladder_rungs=4,
                  # 26 steady steps of 32 (a noise verdict) on the smoke ladder's photos, after
                  # 6 of warm-up (a fresh process's first run took ~0.5 s for each of its steps
                  # 2-5, ten times the rest); its first three rungs: a fresh process's first
                  # aot_eager run traces inside its timed steps (a fifth of its later speed)
                  exercise_rungs=3, exercise_size=1_024, exercise_epochs=1, exercise_batch=32,
                  exercise_warmup_steps=6,
                  # PyTorch's intra-op threads beside two loader workers on CI's 2 cores: its
                  # default, a thread a core, ran at a fifth of this speed while other
                  # programs used the cores (MXNet's default there is one already)
                  exercise_torch_threads=1),
    # the quick ladder's rungs, compiled with inductor, on a fifth of the images
    "check": dict(quick=True, ladder_train_size=10_240, ladder_test_size=2_048,
                  exercise_size=5_120),
}
# the lesson's own sizes (SIZES.<name>): not Experiment fields, kept out of **SIZES
OWN_SIZES = ("compile_backend", "exercise_batch", "exercise_epochs", "exercise_rungs",
             "exercise_size", "exercise_torch_threads", "exercise_warmup_steps",
             "ladder_rungs", "ladder_test_size", "ladder_train_size", "quick")
TALK_COLUMN = "talk speed-up"
# what a ladder trained on, in words, beside the talk's CIFAR-10 (a different data set)
DATA_WORDS = {"synthetic": "the course's generated stand-in for CIFAR-10",
              "folder": "generated photos", "cifar10": "CIFAR-10"}


def latest_ladder(engine: str, runs_dir=None) -> list:
    """The newest ladder of `engine` under `runs_dir` (default: GPU_COURSE_RUNS or runs/):
    its runs in the order they ran, the repeats of a rung (--repeats) as one list; []
    when there is none."""
    root = records.runs_root(runs_dir)
    for folder in sorted((p for p in root.glob(f"ladder-{engine}-*") if p.is_dir()), reverse=True):
        runs = [r for r in records.load_runs(folder) if metrics.engine(r) == engine]
        if runs:
            groups: dict = {}
            for run in runs:
                groups.setdefault(run.name, []).append(run)
            return [g[0] if len(g) == 1 else g for g in groups.values()]
    return []


def ladder(engine: str, sizes, runs_dir=None) -> list:
    """The newest ladder of `engine` (`latest_ladder`), or, with none recorded yet, one
    walked now as `gpu-course ladder` walks it (`--quick` where sizes.quick): one coherent
    set of runs either way."""
    runs = latest_ladder(engine, runs_dir)
    if runs:
        return runs
    from ..ladder import Walk, run_ladder
    print(f"No ladder of the {engine} track recorded yet: walking it now"
          + (" (quick, as `gpu-course ladder --quick`)" if sizes.quick else ""), flush=True)
    runs, _ = run_ladder(engine, quick=sizes.quick, train_size=sizes.ladder_train_size,
                         test_size=sizes.ladder_test_size, runs_dir=runs_dir,
                         walk=Walk(first=sizes.ladder_rungs))
    return runs


def exercise_ladder(engine: str, sizes, gpus: int) -> dict:
    """Exercise 08.1's rungs: {rung: its Experiment}, in order, the ladder as `gpu-course
    ladder` walks it on a machine with `gpus` GPUs (the quick one where sizes.quick), its
    first sizes.exercise_rungs (None: sizes.ladder_rungs), each on sizes.exercise_size
    images (None: the ladder's own) over sizes.exercise_epochs, at sizes.exercise_batch
    where set (a CPU ladder changes no batch), leaving sizes.exercise_warmup_steps out of
    samples/s and with sizes.exercise_torch_threads intra-op threads in PyTorch where
    set. One device (more GPUs are lesson 07's) and no thread rung (its count follows the
    machine's load). Writes the photos a CPU ladder reads, where they are missing."""
    from ..ladder import ensure_photos, rungs
    steps = [r for r in rungs(engine, min(gpus, 1), quick=sizes.quick,
                              train_size=sizes.exercise_size or sizes.ladder_train_size,
                              test_size=sizes.ladder_test_size, epochs=sizes.exercise_epochs)
             if r.name not in (RungName.THREADS, RungName.LONGER)]
    steps = steps[:sizes.exercise_rungs or sizes.ladder_rungs]
    if steps and steps[0].cfg.dataset == "folder":
        ensure_photos(steps[0].cfg)
    own = {k: v for k, v in (("batch_size", sizes.exercise_batch),
                             ("warmup_steps", sizes.exercise_warmup_steps),
                             ("threads", sizes.exercise_torch_threads
                              if engine == "pytorch" else None)) if v}
    return {r.name: r.cfg.replace(name=f"exercise: {r.name}", **own) for r in steps}


def _rungs(runs) -> list:
    """A run per rung: a group of repeats stands by its median run."""
    return [metrics.representative(r) for r in runs]


def _baseline(runs):
    return RungName.NAIVE if RungName.NAIVE in [r.name for r in _rungs(runs)] else 0


def table(runs) -> pd.DataFrame:
    """The ladder table over a run per rung (speed-up against 'naive'), a column for each
    setting that differs between the rungs, and the talk's speed-up for the rungs it had."""
    rungs = _rungs(runs)
    frame = report.ladder_table(rungs, baseline=_baseline(runs))  # + what differs
    frame[TALK_COLUMN] = [f"×{talk.LADDER[r.name] / talk.LADDER['naive']:.2f}"
                          if r.name in talk.LADDER else "–" for r in rungs]
    return frame


def conclude(runs, beside=None) -> Closing:
    """The ladder in sentences: its own conclusion (`report.conclusion`), the fastest rung
    against the talk's, what the GPU did (GPU-Util against GPM's SM activity), what a rung
    could not do here, and the machine. beside: this machine's ladder, when `runs` is the
    reference's: what the two differ in (their speed-ups each have their own baseline)."""
    runs = list(runs)
    if not runs:
        raise ValueError("runs is empty: no ladder to summarise (run `gpu-course ladder`)")
    rungs = _rungs(runs)
    frame = table(runs)
    say = Closing(frame, rungs, varies=RUNG_SETTINGS)
    repeats = [r for r in runs if isinstance(r, (list, tuple))]
    if repeats:
        say(f"The ladder walked {max(len(g) for g in repeats)} times: each row is a rung's "
            "median run, and the conclusion below judges each rung by its runs' spread.")
    if beside is None:   # the ladder's own conclusion, as `gpu-course ladder` prints it
        print(report.conclusion(runs, baseline=_baseline(runs), varies=RUNG_SETTINGS))
    base = metrics.baseline_index(rungs, _baseline(runs))
    done = [i for i, r in enumerate(frame.itertuples()) if r.status == "finished"
            and r.samples_per_sec > 0]
    top = max(done, key=lambda i: frame.samples_per_sec.iloc[i]) if done else None
    if top is not None and top != base and rungs[top].name in talk.LADDER:
        ratio = talk.LADDER[rungs[top].name] / talk.LADDER[RungName.NAIVE]
        epochs = rungs[top].config.get("epochs")
        say(f"On {talk.SOURCE}'s V100s the same rung was {say.quote(talk.SOURCE, ratio, '×{:.1f}')} "
            f"the naive run ({talk.SOURCE}: {talk.WORKLOAD}); here, on "
            f"{DATA_WORDS.get(rungs[top].config.get('dataset'), 'its data')} over "
            f"{say.setting('epochs', epochs)} epoch{'s' if epochs != 1 else ''}, "
            f"'{rungs[top].name}' against '{rungs[base].name}': {say.compare(base, top)}.")
    gpu = [i for i in range(len(rungs)) if not math.isnan(frame.gpu_util.iloc[i])]
    if not gpu:
        say("No rung recorded GPU utilisation: the ladder ran without a GPU. Its fixes keep a "
            "GPU from waiting; where the CPU does the computing too, the computation is the "
            "bottleneck and most of them cannot show, so these factors (and the talk's) are "
            "not comparable.")
    _gpm(say, frame, rungs, gpu, reference=beside is not None)
    named = {r.name: i for i, r in enumerate(rungs)}
    if {RungName.LR_SCHEDULE, RungName.DATA_ON_GPU} <= set(named):
        before, after = named[RungName.LR_SCHEDULE], named[RungName.DATA_ON_GPU]
        say(f"Moving the data to the {'GPU' if metrics.on_gpu(rungs[after]) else 'device (here the CPU)'}, "
            f"samples/s: {say.compare(before, after)}; the data wait went from "
            f"{say.cell(before, 'data_wait_share')} to {say.cell(after, 'data_wait_share')} of "
            "each step.")
    notices: dict = {}
    for run in rungs:
        notice = (run.meta.get("notes") or {}).get("device_notice")
        if notice:
            notices.setdefault(notice, []).append(run.name)
    for notice, names in notices.items():
        say(f"What the records say ran otherwise than asked ({', '.join(names)}): "
            f"{say.quote('the records', notice)}")
    say(f"Measured on {say.quote('the run records', plots.hardware_caption(rungs))} (from the "
        "run records).")
    if beside:
        _beside(say, rungs, _rungs(beside))
    return say


TO_TARGET = ("to_target_s", "to_target_speedup")


def anatomy(runs) -> None:
    """Where each rung's step goes and its time to the naive rung's accuracy (the table
    `gpu-course ladder` prints second, `analyse.anatomy`), then which resource holds which
    rungs, and why a fix that shortens the GPU's part cannot pay on a step the host holds."""
    anatomy_closing(runs)


def anatomy_closing(runs) -> Closing:
    """`anatomy`, returning the Closing that said its lines (for tests and exercises)."""
    from ..analyse.anatomy import GPU_BUSY, INPUT_WAIT, Bound
    from ..show import tables
    from . import _display
    runs = list(runs)
    rungs = _rungs(runs)
    frame, _ = report.anatomy_table(runs, _baseline(runs))
    base = metrics.baseline_index(rungs, _baseline(runs))
    say = Closing(frame, rungs, varies=RUNG_SETTINGS)
    chance = say.at_chance(base)
    _display(tables.show(frame.drop(columns=list(TO_TARGET)) if chance else frame))
    if chance:
        say(f"{say.chance(base)} So '{rungs[base].name}' sets no accuracy to race to: the "
            "time-to-target columns are left out.")
    else:
        say(f"Target: {say.cell(base, 'val_acc')} validation accuracy, what "
            f"'{rungs[base].name}' reached after its epochs; time to target counts training "
            "only (warm-up and compilation included, validation left out); – where a rung's "
            "epochs never got there.")
    say("A step is data-bound when it waits "
        f"{say.setting('anatomy.INPUT_WAIT', INPUT_WAIT, '{:.0%}')} of it for data, GPU-bound "
        f"when kernels run {say.setting('anatomy.GPU_BUSY', GPU_BUSY, '{:.0%}')} of it "
        "(GPU-Util), else host-bound; too few steady steps are not ruled on.")
    held = {}
    for i, bound in enumerate(frame["bound"]):
        held.setdefault(bound, []).append(str(rungs[i].name))
    say("; ".join(f"{bound}: {', '.join(names)}" for bound, names in held.items()) + ".")
    apart = [f"after '{rungs[i].name}' ({frame['bound'].iloc[i]}), {text.split(': not aimed')[0]}"
             for i, text in enumerate(frame["next_rung"]) if ": not aimed" in text]
    if apart:
        say("Where the ladder's order and the anatomy disagree (the next rung changes nothing "
            "aimed at what holds the step; the table names what it changes): "
            + "; ".join(apart) + ".")
    lighter = [str(r.name) for i, r in enumerate(rungs) if frame["bound"].iloc[i] == Bound.HOST
               and (r.name in (RungName.BFLOAT16, RungName.FLOAT16) or (
                   r.name in (RungName.COMPILE, RungName.HYBRIDIZE)
                   and alike.value(r, "graph") == "hybrid"))]   # fusion without graphs
    if lighter:
        say(f"{', '.join(lighter)} make the GPU's part of a step shorter (fused kernels, "
            "16-bit arithmetic), but these steps are held by the host dispatching them: the "
            "GPU already idles between kernels, so a shorter GPU part cannot pay. What pays "
            "there is less dispatch: a larger batch (fewer steps), or a CUDA graph (one "
            "launch a step).")
    return say


def _gpm(say: Closing, frame, rungs, gpu: list, reference: bool) -> None:
    """GPU-Util against the share of SMs that were busy (Hopper's GPM), for the rung where
    the two differ most; or why there is no GPM on this machine."""
    measured = [i for i in gpu if "sm_active" in frame and not math.isnan(frame.sm_active.iloc[i])]
    if measured:
        worst = max(measured, key=lambda i: frame.gpu_util.iloc[i] - frame.sm_active.iloc[i])
        tensor = frame.tensor_active.iloc[worst]
        say(f"{'On the reference, ' if reference else ''}'{rungs[worst].name}': GPU-Util said "
            f"{say.cell(worst, 'gpu_util')} while the SMs were active "
            f"{say.cell(worst, 'sm_active')}"
            + (f" and the tensor cores {say.cell(worst, 'tensor_active')}"
               if not math.isnan(tensor) else "")
            + " of the time: GPU-Util counts time with any kernel running, not how much of the "
              "chip worked.")
    elif not reference:
        devices = sorted({g.get("name") for r in rungs
                          for g in (r.meta.get("hardware") or {}).get("gpus") or []})
        say("SM and tensor-core activity (GPM) are not available on this machine ("
            + (say.quote("the run records", ", ".join(devices)) + ", from the run records"
               if devices else "no GPU") + "): they need a Hopper GPU and a "
            "driver that exposes GPM; only GPU-Util could be recorded"
            + ("." if gpu else ", and here not even that."))


def _beside(say: Closing, reference, mine) -> None:
    """What the reference ladder differs in from this machine's, beyond the machine."""
    def value(runs, field) -> str:
        """The runs' value of `field`, or the range of their values (3–30)."""
        values = {alike.value(r, field) for r in runs}
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            low, high = min(values), max(values)
            return f"{low:,}" if low == high else f"{low:,}–{high:,}"
        return " or ".join(sorted(map(str, values)))
    parts = []
    for field in ("model", "dataset", "train_size", "epochs"):
        theirs, ours = value(reference, field), value(mine, field)
        if theirs != ours:
            parts.append(f"{field.replace('_', ' ')} {say.setting(f'the reference {field}', theirs)}"
                         f" against {say.setting(f'this ladder {field}', ours)}")
    hardware = plots.hardware_caption(reference), plots.hardware_caption(mine)
    say("The reference is another ladder: " + ("; ".join(parts) + "; " if parts else "")
        + f"the machine {say.quote('the run records', hardware[0])} against "
        f"{say.quote('the run records', hardware[1])} (from the run records). Each table's "
        "speed-ups are against its own naive rung: read the two side by side, never one "
        "machine's samples/s against the other's.")


# -- two regimes: the same ladder on a step the host holds and on one the GPU holds --------
HEAVY_MODEL = "wrn16_10"   # `gpu-course ladder --model wrn16_10`: its step is GPU-bound


def regimes_table(light, heavy) -> pd.DataFrame:
    """One row for each rung both ladders walked after their first: what it changed, and
    in each ladder what held the step of the rung before it (`analyse.anatomy`), the
    rung's gain over that rung (samples/s) and the noise verdict on it."""
    from ..analyse import anatomy, noise
    names = [[str(r.name) for r in _rungs(ladder)] for ladder in (light, heavy)]
    rows = []
    for name in names[0][1:]:
        if name not in names[1][1:]:
            continue
        row = {"rung": name}
        for ladder, named, model in ((light, names[0], _model(light)),
                                     (heavy, names[1], _model(heavy))):
            i = named.index(name)
            before, after = ladder[i - 1], ladder[i]
            v = noise.compare(before, after, varies=RUNG_SETTINGS)
            changed = alike.settings(metrics.representative(before),
                                     metrics.representative(after),
                                     ignore=alike.SAME_WORK | {"epochs"})
            row.setdefault("change", ", ".join(sorted(changed)))
            row[f"held by ({model})"] = str(anatomy.anatomy(before).bound)
            row[f"gain ({model})"] = v.ratio
            row[f"verdict ({model})"] = str(v.kind)
        rows.append(row)
    return pd.DataFrame(rows)


def _model(ladder) -> str:
    return str(metrics.representative(ladder[0]).config.get("model", "?"))


def regimes(light, heavy) -> Closing | None:
    """The same ladder on two networks side by side (`regimes_table`), then which fix
    paid on which bottleneck: each gain beyond noise, and whether the rung changed a
    setting aimed at what held the step before it (`anatomy.FIXES`). heavy=[]: none is
    recorded yet, and how to record one."""
    from ..analyse.anatomy import FIXES, Bound
    from . import _display
    if not light or not heavy:
        print(f"No ladder of the GPU-bound regime is recorded beside this one yet: "
              f"`gpu-course ladder --model {HEAVY_MODEL}` on a GPU records one.")
        return None
    frame = regimes_table(light, heavy)
    if not len(frame):
        print(f"The two ladders ({_model(light)}, {_model(heavy)}) share no rung after their "
              "first: nothing to set side by side.")
        return None
    _display(frame)
    say = Closing(frame, key="rung")
    models = (_model(light), _model(heavy))
    paid, aimed, missed = {m: [] for m in models}, [], []
    for i, row in frame.iterrows():
        for model in models:
            held = row[f"held by ({model})"]
            if row[f"verdict ({model})"] != "faster":
                continue
            paid[model].append(f"'{row['rung']}' {say.cell(i, f'gain ({model})', '×{:.2f}')}")
            fixes = FIXES.get(Bound(held)) if held in {b.value for b in FIXES} else None
            if fixes is not None:
                changed = set(row["change"].split(", "))
                (aimed if fixes & changed else missed).append(
                    f"'{row['rung']}' on {model} ({held} before it)")
    for model in models:
        say(f"On {model}, gains beyond noise: " + ("; ".join(paid[model]) or "none") + ".")
    only = {m: [r for r in frame["rung"] if _paid(frame, r, m) and not _paid(frame, r, o)]
            for m, o in (models, models[::-1])}
    for model, other in (models, models[::-1]):
        if only[model]:
            say(f"Paid on {model} and not on {other}: {', '.join(only[model])}: compare what "
                "held each step before it (the 'held by' columns).")
    if aimed or missed:
        say(f"Of the gains beyond noise, {len(aimed)} came from a rung aimed at what held the "
            f"step before it (anatomy.FIXES) and {len(missed)} from one that was not"
            + (f" ({'; '.join(missed)})" if missed else "") + ".")
    return say


def _paid(frame: pd.DataFrame, rung: str, model: str) -> bool:
    return frame.loc[frame["rung"] == rung, f"verdict ({model})"].iloc[0] == "faster"
