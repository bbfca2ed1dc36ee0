import pytest

from gpu_course.experiments import sweep
from gpu_course.ladder import rungs
from gpu_course.measure.records import OutOfMemory, Ran, RunRecord, load_run


@pytest.mark.parametrize("engine, names", [
    ("gluon", ["naive", "workers", "hybridize", "float16", "large-batch", "lr-schedule"]),
    ("pytorch", ["naive", "workers", "compile", "bfloat16", "large-batch", "lr-schedule",
                 "data-on-gpu", "tuned, longer"]),
])
def test_rungs_build_on_each_other(engine, names):
    ladder = rungs(engine, gpus=1, cpu_count=32)
    assert [r.name for r in ladder] == names
    assert ladder[0].cfg.batch_size == 64 and ladder[0].cfg.num_workers == 1
    assert ladder[1].cfg.num_workers == 29  # the talk's cpu_count() - 3
    for before, after in zip(ladder, ladder[1:]):
        assert before.cfg != after.cfg and after.change
    assert ladder[-1].cfg.train_size == 50_000
    assert "loader worker" in ladder[0].limit  # the ladder says what limits naive
    assert ladder[0].change.endswith({"gluon": "imperative", "pytorch": "eager"}[engine])


def test_every_pytorch_rung_trains_the_same_epochs_and_the_long_run_is_a_line_of_its_own():
    ladder = rungs("pytorch", gpus=1, cpu_count=32)
    *steps, longer = ladder
    tuned = steps[-1]
    compiled = next(r for r in steps if r.name == "compile")
    assert compiled.cfg.graph == "static" and "reduce-overhead" in compiled.change   # graphs
    assert tuned.name == "data-on-gpu" and tuned.cfg.graph == "static" and tuned.cfg.data_on_gpu
    assert "one CUDA graph" in tuned.change
    assert tuned.cfg.optimizer == "lars"
    assert len({r.cfg.epochs for r in steps}) == 1   # equal budgets: time to accuracy compares
    assert longer.name == "tuned, longer" and longer.cfg.epochs >= 10
    assert longer.cfg.replace(epochs=tuned.cfg.epochs, name=tuned.name) == tuned.cfg
    assert "not a rung" in longer.change
    four = rungs("pytorch", gpus=4, cpu_count=32)
    assert four[-2].name == "all-gpus" and four[-2].cfg.graph == "hybrid"   # DDP
    assert four[-2].cfg.epochs == tuned.cfg.epochs and four[-1].name == "tuned, longer"
    assert [r.name for r in rungs("pytorch", gpus=1, epochs=2)][-1] == "data-on-gpu"  # asked: kept
    cpu = {r.name: r for r in rungs("pytorch", gpus=0, cpu_count=2)}
    assert cpu["compile"].cfg.graph == "hybrid"   # no CUDA graphs to replay on a CPU
    assert "tuned, longer" not in [r.name for r in rungs("pytorch", gpus=1, quick=True)]


def test_the_ladder_can_train_another_network_the_other_regime():
    assert {r.cfg.model for r in rungs("pytorch", gpus=1, model="wrn16_10")} == {"wrn16_10"}
    assert {r.cfg.model for r in rungs("pytorch", gpus=0, cpu_count=2, model="resnet20")} == \
        {"resnet20"}   # a CPU ladder's tiny network replaced too


def test_more_gpus_add_a_rung_and_cpu_sizes_are_small():
    assert rungs("gluon", gpus=4, cpu_count=8)[-1].cfg.num_gpus == 4
    cpu = rungs("gluon", gpus=0, cpu_count=2)
    assert cpu[1].cfg.num_workers == 2 and cpu[0].cfg.train_size <= 16_000
    quick = rungs("pytorch", gpus=0, quick=True)
    assert all(r.cfg.epochs == 1 and r.cfg.train_size <= 1024 for r in quick)
    assert rungs("gluon", gpus=0, train_size=300)[0].cfg.train_size == 300


def test_sweep_marks_oom_and_goes_on(runs_dir):
    from gpu_course.config import Experiment

    def train(cfg):
        rec = RunRecord(cfg.to_dict(), Ran("gluon"), runs_dir=runs_dir, hardware_info={})
        if cfg.batch_size > 256:
            err = OutOfMemory(f"batch {cfg.batch_size} does not fit")
            with pytest.raises(OutOfMemory):
                with rec:
                    raise err
            err.run_path = rec.path
            raise err
        rec.finish()
        return load_run(rec.path)
    runs = sweep(train, Experiment(), "batch_size", [64, 512, 128])
    assert [r.config["batch_size"] for r in runs] == [64, 512, 128]
    assert [r.status for r in runs] == ["finished", "oom", "finished"]
    assert runs[1].name == "batch_size=512"
    calls = []
    repeated = sweep(lambda cfg: calls.append(cfg.batch_size) or train(cfg), Experiment(),
                     "batch_size", [64, 512, 128], repeats=2)
    assert calls == [64, 512, 128, 64, 128]  # interleaved; what ran out of memory once is not retried
    assert [len(p) if isinstance(p, list) else 1 for p in repeated] == [2, 1, 2]
    with pytest.raises(ValueError, match=r"repeats=0 must be an integer >= 1"):
        sweep(train, Experiment(), "batch_size", [64], repeats=0)



@pytest.mark.parametrize("engine, names", [
    ("gluon", ["naive", "workers", "data-format", "hybridize", "lr-schedule"]),
    ("pytorch", ["naive", "workers", "data-format", "compile", "bfloat16", "lr-schedule",
                 "data-on-gpu", "threads"]),
])
def test_a_cpu_ladder_has_the_rungs_a_cpu_shows_and_names_the_others(engine, names,
                                                                      monkeypatch):
    """On a CPU (one with bfloat16 instructions, faked) the GPU-only rungs are left out and
    said to be; the network is one that learns in minutes."""
    from gpu_course.env.cpu import FAKE
    from gpu_course.ladder import CPU_MODEL, GPU_ONLY, closing_lines
    monkeypatch.setenv(FAKE, "+avx512_bf16")
    cpu = rungs(engine, gpus=0, cpu_count=2)
    assert [r.name for r in cpu] == names
    assert all(r.cfg.model == CPU_MODEL for r in cpu)
    left_out = {name for name, _ in GPU_ONLY[engine]}
    assert not left_out & set(names) and "all-gpus" in left_out
    lines, ok = closing_lines(engine, [], 0, check_accuracy=False)
    assert ok and lines[0].startswith("Left out on this CPU, their effect needs a GPU: ")
    assert "large-batch (lesson 05: " in lines[0] and "all-gpus (lesson 07: " in lines[0]
    assert rungs(engine, gpus=1, cpu_count=2)[0].cfg.model == "resnet20"  # a GPU: unchanged


@pytest.mark.parametrize("fake, shown", [("+avx512_bf16", True), ("+amx_bf16", True),
                                         ("-avx512,-amx", False), ("-avx512_bf16,-amx", False)])
def test_the_pytorch_cpu_ladder_has_bfloat16_only_where_the_cpu_computes_it(fake, shown,
                                                                             monkeypatch):
    """Without bfloat16 instructions (faked off) the rung would only be slower, and every
    rung above it too: it is left out and said to be, with the CPU's instruction sets."""
    from gpu_course.env.cpu import FAKE
    from gpu_course.ladder import closing_lines
    monkeypatch.setenv(FAKE, fake)
    names = [r.name for r in rungs("pytorch", gpus=0, cpu_count=2)]
    assert ("bfloat16" in names) == shown
    assert [r.cfg.dtype for r in rungs("pytorch", gpus=0, cpu_count=2)][-1] == \
        ("bfloat16" if shown else "float32")
    lines, _ = closing_lines("pytorch", [], 0, check_accuracy=False)
    lacking = [line for line in lines if line.startswith("Left out on this CPU, which lacks")]
    assert bool(lacking) == (not shown)
    if lacking:
        assert "bfloat16 (lesson 04: a CPU multiplies bfloat16 faster" in lacking[0]
        assert "no AVX512-BF16, no AMX" in lacking[0] and f"({FAKE}={fake}" in lacking[0]
    assert "bfloat16" in [r.name for r in rungs("pytorch", gpus=1, cpu_count=2)]   # a GPU
    assert [r.name for r in rungs("gluon", gpus=0, cpu_count=2)] == \
        ["naive", "workers", "data-format", "hybridize", "lr-schedule"]


@pytest.mark.parametrize("engine", ["gluon", "pytorch"])
def test_the_cpu_ladder_reads_loose_photos_until_its_data_format_rung(engine):
    """The data format is a rung that pays on a CPU, so the CPU ladder starts
    from photos read as loose JPEGs and packs them once, offline, at its data-format rung
    (after the loader workers, in the talk's order); a GPU ladder reads from memory."""
    from gpu_course.ladder import PHOTO_SIDES, photo_folder
    cpu = {r.name: r for r in rungs(engine, gpus=0, cpu_count=2)}
    names = list(cpu)
    assert names.index("workers") + 1 == names.index("data-format")
    assert {r.cfg.dataset for r in cpu.values()} == {"folder"}
    assert [cpu[n].cfg.data_format for n in ("naive", "workers", "data-format")] == \
        ["loose", "loose", "memory"]
    train = {"gluon": 16_000, "pytorch": 14_000}[engine]  # PyTorch's has two rungs more
    assert {(r.cfg.train_size, r.cfg.test_size, r.cfg.epochs, r.cfg.image_size)
            for r in cpu.values()} == {(train, 2_000, 4, 24)}   # 24 px: a CPU's arithmetic
    assert cpu["naive"].cfg.data_dir == str(photo_folder(train, 2_000))
    assert f"loose JPEGs ({PHOTO_SIDES[0]}-{PHOTO_SIDES[1]} px)" in cpu["naive"].change
    assert "opens, decodes and resizes each photo" in cpu["naive"].limit
    if engine == "pytorch":  # the whole set in one tensor: from memory
        assert cpu["data-on-gpu"].cfg.data_format == "memory"
    else:  # without its warm-up the tiny network stalled at chance for an epoch
        assert cpu["lr-schedule"].cfg.warmup_epochs == 1.0
    gpu = rungs(engine, gpus=1, cpu_count=32)
    assert {r.cfg.dataset for r in gpu} == {"synthetic"} and "data-format" not in \
        [r.name for r in gpu]
    # enough photos for training plus validation, which takes at most a fifth of them
    assert photo_folder(20_000, 2_000).name == f"photos-{PHOTO_SIDES[0]}-{PHOTO_SIDES[1]}px-22000"
    assert photo_folder(1024, 512).name.endswith("-2560")


def test_the_cpu_ladder_checks_that_its_last_rung_learned(runs_dir):
    from gpu_course.config import Experiment
    from gpu_course.ladder import closing_lines

    def finished(name, val_acc):
        rec = RunRecord(Experiment(name=name, model="tiny").to_dict(), Ran("gluon"),
                        runs_dir=runs_dir, hardware_info={})
        rec.add_epoch({"epoch": 0, "epoch_time_s": 1.0, "samples": 64, "val_acc": val_acc})
        rec.finish()
        return load_run(rec.path)
    lines, ok = closing_lines("gluon", [finished("naive", 0.5), finished("last", 0.3)], 0,
                              check_accuracy=True)
    assert not ok and lines[-1] == ("Accuracy check: 'last' reached 30.0% validation accuracy; "
                                    "it must reach 40% (chance 10%): MISSED.")
    assert closing_lines("gluon", [finished("last", 0.45)], 0, check_accuracy=True)[1]



def _finished(runs_dir, name, engine="pytorch", threads=2, workers=0, loadavg=None,
              cpu_s=None, source=None):
    """A finished one-epoch record with the threads that ran and, optionally, the load
    while it ran: the 1-minute load average and the process's CPU seconds over 10 s."""
    from gpu_course.config import Experiment
    facts = {"threads": {"intra_op": threads, **({"intra_op_from": source} if source else {})},
             "cpu_count": 2}
    rec = RunRecord(Experiment(name=name, engine=engine, model="tiny", num_workers=workers
                               ).to_dict(), Ran(engine, facts=facts), runs_dir=runs_dir,
                    hardware_info={})
    if loadavg is not None:
        rec.meta["load"]["start"] = {"loadavg_1m": loadavg, "process_cpu_s": 0.0, "wall": 0.0,
                                     "cpu_count": 2}
    rec.add_epoch({"epoch": 0, "epoch_time_s": 1.0, "samples": 64, "val_acc": 0.5})
    rec.finish()
    if loadavg is not None:
        rec.meta["load"]["end"] = {"loadavg_1m": loadavg, "process_cpu_s": cpu_s, "wall": 10.0}
        rec._write_meta()
    return load_run(rec.path)


def test_the_thread_rung_takes_the_cores_other_programs_left_free(runs_dir):
    """On the course's 2-core CPU PyTorch's default (a thread a core) is right
    when nothing else runs and collapses when another program uses a core; the rung after
    data-on-gpu gives training the cores left free, or is left out."""
    from gpu_course.ladder import free_threads
    ladder = {r.name: r for r in rungs("pytorch", gpus=0, cpu_count=2)}
    assert ladder["threads"].cfg.threads == 2 and ladder["threads"].cfg.num_workers == 0
    assert "threads" not in [r.name for r in rungs("gluon", gpus=0, cpu_count=2)]
    assert all(r.cfg.threads is None for r in rungs("pytorch", gpus=1, cpu_count=32))
    alone = _finished(runs_dir, "data-on-gpu", loadavg=2.1, cpu_s=19.0)   # 1.9 cores its own
    shared = _finished(runs_dir, "data-on-gpu", loadavg=3.2, cpu_s=10.0)  # 1 core its own
    assert free_threads(alone)[0] == 2
    threads, other = free_threads(shared)
    assert threads == 1 and other == pytest.approx(2.2)


def test_run_ladder_leaves_the_thread_rung_out_when_nothing_else_ran(monkeypatch, tmp_path,
                                                                    capsys):
    from gpu_course import ladder
    from gpu_course.ladder import Walk, run_ladder

    trained = []
    monkeypatch.setattr(ladder, "adapter", lambda engine: _quiet_adapter(trained))
    runs, _ = run_ladder("pytorch", quick=True, runs_dir=tmp_path,
                         walk=Walk(only=["data-on-gpu", "threads"]))
    assert trained == [("data-on-gpu", None)] and [r.name for r in runs] == ["data-on-gpu"]
    assert "=== rung threads: left out: other programs used" in capsys.readouterr().out


def test_run_ladder_prepares_a_new_data_format_once_and_records_its_cost(monkeypatch,
                                                                         tmp_path, capsys):
    """The data-format rung's packed copy is made before the rung, outside its timed
    run, once for all repeats; every run of the rung records what it cost (notes)."""
    from gpu_course import ladder
    from gpu_course.data.packed import Prepared
    from gpu_course.ladder import Walk, run_ladder

    class Adapter:
        @staticmethod
        def gpu_count():
            return 0

        @staticmethod
        def prepare_data(cfg, progress=True):
            calls.append((cfg.name, cfg.data_format))
            if cfg.data_format == "loose":
                return None
            return Prepared("one packed file", "/p/x.pack", cfg.train_size, 2.5, False)

        @staticmethod
        def train(cfg, runs_dir=None, progress=False):
            seeds.append((cfg.name, cfg.seed))
            return _finished(runs_dir, cfg.name)
    calls, seeds = [], []
    monkeypatch.setattr(ladder, "adapter", lambda engine: Adapter)
    groups, _ = run_ladder("pytorch", quick=True, runs_dir=tmp_path,
                           walk=Walk(["workers", "data-format", "compile"], repeats=2))
    assert calls == [("workers", "loose"), ("data-format", "memory"), ("workers", "loose")]
    # each walk has its own seed, the same for every rung of the walk
    assert seeds == [("workers", 0), ("data-format", 0), ("compile", 0),
                     ("workers", 1), ("data-format", 1), ("compile", 1)]
    workers, packed, compiled = groups
    assert all("prepared" not in run.meta["notes"] for run in workers + compiled)
    assert [run.meta["notes"]["prepared"] for run in packed] == 2 * [
        {"what": "one packed file", "path": "/p/x.pack", "images": 1024, "seconds": 2.5,
         "reused": False}]
    out = capsys.readouterr().out
    assert "one packed file: 1,024 images prepared once, offline, in 2.5 s" in out
    # the photos were written before the first rung
    assert (ladder.photo_folder(1024, 512) / ".gpu_course.json").exists()


def test_the_closing_text_says_which_threads_ran(runs_dir):
    from gpu_course.ladder import closing_lines
    lines, _ = closing_lines("pytorch", [_finished(runs_dir, "data-on-gpu", threads=2),
                                         _finished(runs_dir, "threads", threads=1)], 0, False)
    assert "Threads: the 'threads' rung ran 1 thread, 'data-on-gpu' before it 2 threads." in lines
    lines, _ = closing_lines("pytorch", [_finished(runs_dir, "data-on-gpu", loadavg=2.0,
                                                   cpu_s=19.5)], 0, False)
    assert lines[-1].startswith("Threads: 'data-on-gpu' ran 2 threads; no thread rung: other "
                                "programs used 0.1 cores during 'data-on-gpu', so PyTorch's "
                                "default, a thread a core, was already the right count")
    default = "MXNet's default on x86: half the cores"
    lines, _ = closing_lines("gluon", [_finished(runs_dir, "lr-schedule", "gluon", threads=1,
                                                 workers=2, source=default)], 0, False)
    assert lines[-1].startswith(f"Threads: MXNet's operators ran 1 thread ({default}) beside "
                                "2 loader workers on 2 cores; MXNet fixes the count when it is "
                                "imported")


def test_a_short_run_after_a_busy_one_is_not_read_as_shared(runs_dir):
    """The 1-minute load average trails: the CPU ladder's data-on-gpu rung (no loader
    workers) started with the load of the rung before it (two workers) and read as
    shared, so the thread rung took a core away and ran x0.57. The machine's
    busy CPU time over the run decides where it was recorded."""
    from gpu_course.analyse import metrics
    from gpu_course.ladder import free_threads

    def with_busy(busy_cores):
        run = _finished(runs_dir, "data-on-gpu", loadavg=3.4, cpu_s=19.5)  # 1.95 cores own
        meta = run.meta
        meta["load"]["start"]["cpu_busy_s"] = 100.0
        meta["load"]["end"]["cpu_busy_s"] = 100.0 + 10.0 * busy_cores
        from gpu_course.measure.records import write_meta
        write_meta(run.path, meta)
        return load_run(run.path)
    alone = metrics.machine_load(with_busy(2.0))
    assert alone["busy_cores"] == pytest.approx(2.0) and not alone["shared"]
    assert free_threads(with_busy(2.0))[0] == 2
    # a busy loop on one core: the run got about one core of its two
    run = _finished(runs_dir, "data-on-gpu", loadavg=3.4, cpu_s=11.0)
    run.meta["load"]["start"]["cpu_busy_s"] = 0.0
    run.meta["load"]["end"]["cpu_busy_s"] = 20.0
    assert metrics.machine_load(run)["shared"] and free_threads(run)[0] == 1
    from gpu_course.measure.records import machine_load  # what a record keeps
    assert machine_load()["cpu_busy_s"] > 0


def test_run_ladder_walks_only_the_first_rungs_when_asked(monkeypatch, tmp_path):
    """Lesson 08 in smoke mode walks the first rungs of the ladder, in order."""
    from gpu_course import ladder
    from gpu_course.ladder import RungName, Walk, run_ladder

    monkeypatch.setattr(ladder, "adapter", lambda engine: _quiet_adapter([]))
    monkeypatch.setattr(ladder, "ensure_photos", lambda cfg, progress: None)
    runs, _ = run_ladder("pytorch", quick=True, runs_dir=tmp_path, walk=Walk(first=3))
    assert [r.name for r in runs] == [RungName.NAIVE, RungName.WORKERS, RungName.DATA_FORMAT]


def _quiet_adapter(trained: list, fails: Exception | None = None):
    """An adapter that trains nothing: each rung is a finished record with a quiet load,
    and (name, threads) of each rung it was asked to train is appended to `trained`;
    with `fails`, every rung raises it instead."""
    class Adapter:
        @staticmethod
        def gpu_count():
            return 0

        @staticmethod
        def prepare_data(cfg, progress=True):
            return None

        @staticmethod
        def train(cfg, runs_dir=None, progress=False):
            if fails is not None:
                raise fails
            trained.append((cfg.name, cfg.threads))
            return _finished(runs_dir, cfg.name, loadavg=2.0, cpu_s=19.5)
    return Adapter


def test_a_ladder_whose_every_rung_failed_says_so_in_one_line(monkeypatch, tmp_path, capsys):
    from gpu_course import cli, ladder
    monkeypatch.setattr(ladder, "adapter",
                        lambda engine: _quiet_adapter([], fails=ValueError("no data here")))
    monkeypatch.setattr(ladder, "ensure_photos", lambda cfg, progress: None)
    monkeypatch.delenv("GPU_COURSE_DEBUG", raising=False)
    with pytest.raises(RuntimeError, match="every rung of the pytorch ladder failed"):
        ladder.run_ladder("pytorch", quick=True, runs_dir=tmp_path, walk=ladder.Walk(first=2))
    code = cli.main(["ladder", "--engine", "pytorch", "--quick", "--runs-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and "gpu-course ladder: RuntimeError: every rung" in err
    assert "Traceback" not in err and "GPU_COURSE_DEBUG=1" in err
