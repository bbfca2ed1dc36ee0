import pytest

from gpu_course.experiments import sweep
from gpu_course.ladder import rungs
from gpu_course.records import OutOfMemory, RunRecord, load_run


@pytest.mark.parametrize("engine, names", [
    ("gluon", ["naive", "workers", "hybridize", "float16", "large-batch", "lr-schedule"]),
    ("pytorch", ["naive", "workers", "compile", "bfloat16", "large-batch", "lr-schedule",
                 "data-on-gpu", "cuda-graphs"]),
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


def test_the_tuned_pytorch_rung_is_one_cuda_graph_and_runs_long_enough():
    tuned = rungs("pytorch", gpus=1, cpu_count=32)[-1]
    assert tuned.cfg.graph == "static" and tuned.cfg.data_on_gpu
    assert tuned.cfg.optimizer == "lars" and tuned.cfg.epochs >= 10
    assert rungs("pytorch", gpus=4, cpu_count=32)[-1].cfg.graph == "hybrid"  # DDP
    assert rungs("pytorch", gpus=1, epochs=2)[-1].cfg.epochs == 2  # asked for: kept


def test_more_gpus_add_a_rung_and_cpu_sizes_are_small():
    assert rungs("gluon", gpus=4, cpu_count=8)[-1].cfg.num_gpus == 4
    cpu = rungs("gluon", gpus=0, cpu_count=2)
    assert cpu[1].cfg.num_workers == 2 and cpu[0].cfg.train_size <= 20_000
    quick = rungs("pytorch", gpus=0, quick=True)
    assert all(r.cfg.epochs == 1 and r.cfg.train_size <= 1024 for r in quick)
    assert rungs("gluon", gpus=0, train_size=300)[0].cfg.train_size == 300


def test_sweep_marks_oom_and_goes_on(runs_dir):
    from gpu_course.config import Experiment

    def train(cfg):
        rec = RunRecord(cfg.to_dict(), "gluon", runs_dir=runs_dir, hardware_info={})
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



@pytest.fixture
def x86_without_thread_variables(monkeypatch):
    """MXNet's own thread count as on the course's CPU: half the cores."""
    from gpu_course import cores
    monkeypatch.setattr(cores.platform, "machine", lambda: "x86_64")
    for name in ("OMP_NUM_THREADS", "MXNET_OMP_MAX_THREADS"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("engine, names", [
    ("gluon", ["naive", "workers", "hybridize", "lr-schedule"]),
    ("pytorch", ["naive", "workers", "threads", "compile", "bfloat16", "lr-schedule",
                 "data-on-gpu"]),
])
def test_a_cpu_ladder_has_the_rungs_a_cpu_shows_and_names_the_others(
        engine, names, x86_without_thread_variables):
    """Issue 10: on a CPU the GPU-only rungs are left out and said to be; the network is
    one that learns in minutes."""
    from gpu_course.ladder import CPU_MODEL, GPU_ONLY, closing_lines
    cpu = rungs(engine, gpus=0, cpu_count=2)
    assert [r.name for r in cpu] == names
    assert all(r.cfg.model == CPU_MODEL for r in cpu)
    left_out = {name for name, _, _ in GPU_ONLY[engine]}
    assert not left_out & set(names) and "more GPUs" in left_out
    lines, ok = closing_lines(engine, [], 0, check_accuracy=False)
    assert ok and lines[0].startswith("Left out on this CPU, their effect needs a GPU: ")
    assert rungs(engine, gpus=1, cpu_count=2)[0].cfg.model == "resnet20"  # a GPU: unchanged


def test_the_cpu_ladder_checks_that_its_last_rung_learned(runs_dir):
    from gpu_course.config import Experiment
    from gpu_course.ladder import closing_lines

    def finished(name, val_acc):
        rec = RunRecord(Experiment(name=name, model="tiny").to_dict(), "gluon",
                        runs_dir=runs_dir, hardware_info={})
        rec.add_epoch({"epoch": 0, "epoch_time_s": 1.0, "samples": 64, "val_acc": val_acc})
        rec.finish()
        return load_run(rec.path)
    lines, ok = closing_lines("gluon", [finished("naive", 0.5), finished("last", 0.3)], 0,
                              check_accuracy=True)
    assert not ok and lines[-1] == ("Accuracy check: the last rung, 'last', reached 30.0% "
                                    "validation accuracy; it must reach 40% (chance is 10%): "
                                    "MISSED.")
    assert closing_lines("gluon", [finished("last", 0.45)], 0, check_accuracy=True)[1]


def test_the_thread_rung_gives_training_the_cores_the_loader_workers_leave(
        x86_without_thread_variables):
    """Issue 10: PyTorch sets the count per run; MXNet's is fixed at import, so its rung
    runs in a process of its own, and only where MXNet's own count differs."""
    ladder = {r.name: r for r in rungs("pytorch", gpus=0, cpu_count=2)}
    assert (ladder["threads"].cfg.threads, ladder["threads"].cfg.num_workers) == (1, 2)
    assert ladder["compile"].cfg.threads == 1 and not ladder["threads"].env
    assert (ladder["data-on-gpu"].cfg.threads, ladder["data-on-gpu"].cfg.num_workers) == (2, 0)
    assert "threads" not in [r.name for r in rungs("gluon", gpus=0, cpu_count=2)]  # 1 = 1
    gluon = rungs("gluon", gpus=0, cpu_count=32)[-1]  # 29 workers leave 3; MXNet takes 16
    assert gluon.name == "threads" and gluon.cfg.threads == 3
    assert gluon.env == (("OMP_NUM_THREADS", "3"),)
    assert all(r.cfg.threads is None for r in rungs("pytorch", gpus=1, cpu_count=32))


def test_the_closing_text_says_which_threads_ran(runs_dir):
    from gpu_course.config import Experiment
    from gpu_course.ladder import closing_lines

    def ran(name, engine, threads, workers=2, source=None):
        facts = {"threads": {"intra_op": threads, **({"intra_op_from": source} if source
                                                     else {})}, "cpu_count": 2}
        rec = RunRecord(Experiment(name=name, engine=engine, model="tiny",
                                   num_workers=workers).to_dict(), engine,
                        runs_dir=runs_dir, hardware_info={}, facts=facts)
        rec.add_epoch({"epoch": 0, "epoch_time_s": 1.0, "samples": 64, "val_acc": 0.5})
        rec.finish()
        return load_run(rec.path)
    lines, _ = closing_lines("pytorch", [ran("workers", "pytorch", 2),
                                         ran("threads", "pytorch", 1)], 0, False)
    assert ("Threads: the 'threads' rung ran 1 thread in the training process, 'workers' "
            "before it 2 threads.") in lines
    default = "MXNet's default on x86: half the cores"
    lines, _ = closing_lines("gluon", [ran("lr-schedule", "gluon", 1, source=default)], 0,
                             False)
    assert (f"Threads: MXNet's operators ran 1 thread ({default}) beside 2 loader workers on "
            "2 cores, already the cores the workers leave, so this ladder has no thread rung"
            ) in lines[-1]
