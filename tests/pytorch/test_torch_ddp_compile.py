"""The two slow paths, each in one short run: DistributedDataParallel over two CPU
processes (gloo), and torch.compile."""
import pytest

from gpu_course.tracks import torch as gc


def test_two_gloo_processes_train_one_epoch_and_rank0_records_it(small_cfg, runs_dir, capsys):
    cfg = small_cfg.replace(num_gpus=2, batch_size=16, test_size=32)
    run = gc.train(cfg, progress=False)
    assert run.status == "finished" and run.path.parent == runs_dir
    assert run.config["num_gpus"] == 2
    assert run.meta["ran"]["world_size"] == 2 and run.meta["notes"]["devices"] == "2 x cpu"
    # each process took half of the 256 images: 8 steps of 16; the record counts both
    assert list(run.epochs["steps"]) == [8] and list(run.epochs["samples"]) == [256]
    assert run.epochs[["loss", "train_acc", "val_acc"]].notna().all(axis=None)
    out = capsys.readouterr().out
    assert out.count("[Epoch 0]") == 1  # only rank 0 reports
    assert len(list(runs_dir.iterdir())) == 1  # and keeps a record


@pytest.mark.parametrize("graph, recorded", [("compile", "hybrid"), ("cuda-graphs", "static")])
def test_compiled_network_trains(small_cfg, monkeypatch, graph, recorded):
    # aot_eager traces and compiles in seconds; the default inductor backend takes
    # minutes on a two-core CPU (it generates and builds C++ kernels)
    monkeypatch.setenv(gc.COMPILE_BACKEND_ENV, "aot_eager")
    run = gc.train(small_cfg.replace(graph=graph, max_steps=3), progress=False, verbose=False)
    # asked in PyTorch's words, recorded in the canonical one; no CUDA graphs on a CPU:
    # "cuda-graphs" runs compiled without them, and the record says so in PyTorch's words
    assert run.status == "finished" and run.config["graph"] == recorded
    if graph == "cuda-graphs":
        assert run.meta["requested"] == {"graph": "static"}
        assert gc.metrics.label(run) == \
            "test (graph compiled, no CUDA graphs ran, cuda-graphs requested)"
    assert run.meta["ran"]["compile_backend"] == "aot_eager"
    assert run.epochs["loss"].notna().all()


def test_a_rank_out_of_memory_marks_rank0s_record_and_raises(small_cfg, runs_dir, monkeypatch):
    """Rank 1 ran out of memory and torchrun stopped rank 0 (its record: interrupted)."""
    from gpu_course.measure.records import OutOfMemory, Ran, RunRecord, load_run
    from gpu_course.tracks.torch import ddp

    def fake_torchrun(command, env):
        record = RunRecord(small_cfg.to_dict(), Ran("pytorch"), runs_dir=runs_dir)
        record.finish("interrupted", error="stopped by signal 15")
        result_file = command[command.index("--result-file") + 1]
        with open(result_file, "w") as f:
            f.write(str(record.path))
        lines = ["[Epoch 0] ...\n", f"{ddp.OOM_MARKER} rank 1: batch_size=4096 per device "
                 "does not fit on cuda:1\n", "[rank1]: Traceback ...\n"]
        return lines, 1, False
    monkeypatch.setattr(ddp, "_stream", fake_torchrun)
    with pytest.raises(OutOfMemory, match="batch_size=4096") as caught:
        gc.train(small_cfg.replace(num_gpus=2), progress=False)
    run = load_run(caught.value.run_path)
    assert run.status == "oom" and "rank 1" in run.meta["error"]


def test_a_failed_worker_shows_its_own_traceback(small_cfg, monkeypatch):
    from gpu_course.tracks.torch import ddp
    lines = ["[rank0]: Traceback (most recent call last):\n", "[rank0]:   File \"x.py\"\n",
             "[rank0]: ValueError: bad\n", "Traceback (most recent call last):\n",
             "  File \"run.py\"\n", "ChildFailedError:\n"]
    monkeypatch.setattr(ddp, "_stream", lambda command, env: (lines, 1, False))
    with pytest.raises(RuntimeError, match="status 1") as caught:
        gc.train(small_cfg.replace(num_gpus=2), progress=False)
    assert str(caught.value).endswith("Traceback (most recent call last):\n  File \"x.py\"\n"
                                      "ValueError: bad\n")
