import pytest
import torch

from gpu_course.analyse import noise
from gpu_course.tracks import torch as gc
from gpu_course.measure.records import OutOfMemory, load_run
from gpu_course.tracks.torch.devices import out_of_memory

CUDA_OOM = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.19 GiB of which 1.06 GiB is free.")


def test_train_writes_a_finished_run_record(small_cfg, runs_dir):
    run = gc.train(small_cfg.replace(epochs=2, lr_scheduler="cosine", warmup_epochs=1),
                   progress=False)
    assert run.status == "finished" and run.path.parent == runs_dir
    assert run.meta["engine"] == "pytorch" and run.config["model"] == "tiny"
    assert list(run.epochs["epoch"]) == [0, 1]
    assert list(run.epochs["steps"]) == [8, 8] and list(run.epochs["samples"]) == [256, 256]
    for column in ("loss", "train_acc", "val_acc", "lr", "samples_per_sec"):
        assert run.epochs[column].notna().all(), column
    assert run.epochs["lr"].iloc[0] == pytest.approx(0.1)  # warm-up over, cosine about to start
    assert run.epochs["lr"].iloc[1] < 0.01                   # the end of the cosine
    assert run.summary["samples_per_sec"] > 0 and "TYPECAST: float32" in run.summary["summary_line"]


def test_a_gluon_config_runs_as_pytorch_and_says_so(small_cfg):
    run = gc.train(small_cfg.replace(engine="gluon"), progress=False, verbose=False)
    assert run.meta["engine"] == run.config["engine"] == "pytorch"


def test_no_gpu_means_cpu_with_a_notice(small_cfg, capsys):
    run = gc.train(small_cfg.replace(num_gpus=1), progress=False)
    assert "No GPU found" in capsys.readouterr().out
    assert run.meta["notes"]["device_notice"].startswith("No GPU found")
    assert run.config["num_gpus"] == 1


def test_bfloat16_autocast_and_channels_last_run_on_the_cpu(small_cfg):
    run = gc.train(small_cfg.replace(dtype="bfloat16", channels_last=True), progress=False)
    assert run.status == "finished" and run.config["dtype"] == "bfloat16"
    assert run.epochs["loss"].notna().all()


def test_float16_on_the_cpu_runs_as_bfloat16_and_the_record_says_so(small_cfg):
    run = gc.train(small_cfg.replace(dtype="float16", max_steps=2), progress=False)
    assert run.config["dtype"] == "bfloat16"
    assert "bfloat16" in run.meta["notes"]["device_notice"]


def test_float16_scaler_path(small_cfg):
    """float16 with a GradScaler, as on a GPU (the CPU autocasts float16 too, slowly)."""
    from gpu_course.tracks.torch.train import Precision
    net = gc.get_model("tiny")
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    precision = Precision("float16", torch.device("cpu"))
    assert precision.scaler is not None and Precision("bfloat16", "cpu").scaler is None
    x, y = torch.randn(4, 3, 32, 32), torch.tensor([0, 1, 2, 3])
    with precision.autocast():
        loss = torch.nn.functional.cross_entropy(net(x), y)
    before = net.output.weight.detach().clone()
    precision.backward_and_step(loss, opt)
    assert not torch.equal(before, net.output.weight)


def test_passed_in_network_and_loaders_are_used(small_cfg):
    net = gc.get_model("tiny")
    train_iter, val_iter = gc.load_data(small_cfg)
    run = gc.train(small_cfg, net=net, train_iter=train_iter, val_iter=val_iter,
                   devices=[torch.device("cpu")], progress=False, verbose=False)
    assert run.status == "finished"
    assert next(net.parameters()).grad is not None  # trained in place


def test_data_on_gpu_trains_from_the_resident_loader(small_cfg):
    run = gc.train(small_cfg.replace(data_on_gpu=True), progress=False, verbose=False)
    assert run.status == "finished" and run.epochs["samples"].iloc[0] == 256


class CountingLoader:
    """A loader that counts how many batches were fetched from it."""

    def __init__(self, loader, stop_after=None):
        self.loader, self.fetched, self.stop_after = loader, 0, stop_after

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            if self.stop_after is not None and self.fetched == self.stop_after:
                raise KeyboardInterrupt  # Ctrl-C in the middle of an epoch
            self.fetched += 1
            yield batch


class Untouchable(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x):
        raise AssertionError("mock='trainer' must not compute")


def test_mock_loader_fetches_one_batch_and_steps_on_it(small_cfg):
    train_iter, _ = gc.load_data(small_cfg)
    counting = CountingLoader(train_iter)
    run = gc.train(small_cfg.replace(mock="loader", epochs=2), train_iter=counting,
                   progress=False, verbose=False)
    assert counting.fetched == 1
    assert list(run.epochs["steps"]) == [8, 8] and run.epochs["val_acc"].isna().all()


def test_mock_trainer_fetches_every_batch_and_computes_nothing(small_cfg):
    train_iter, _ = gc.load_data(small_cfg)
    counting = CountingLoader(train_iter)
    run = gc.train(small_cfg.replace(mock="trainer"), net=Untouchable(), train_iter=counting,
                   progress=False, verbose=False)
    assert counting.fetched == 8 and run.epochs["samples"].iloc[0] == 256


def test_interrupted_run_keeps_finished_epochs(small_cfg, runs_dir):
    train_iter, _ = gc.load_data(small_cfg)
    with pytest.raises(KeyboardInterrupt):
        gc.train(small_cfg.replace(epochs=3), train_iter=CountingLoader(train_iter, stop_after=12),
                 progress=False, verbose=False)
    (path,) = runs_dir.iterdir()
    run = load_run(path)
    assert run.status == "interrupted" and list(run.epochs["epoch"]) == [0]


class OutOfMemoryAbove(torch.nn.Module):
    """Runs out of (pretend) GPU memory when a batch is larger than `limit`."""

    def __init__(self, limit):
        super().__init__()
        self.limit, self.net = limit, gc.get_model("tiny")

    def forward(self, x):
        if len(x) > self.limit:
            raise torch.cuda.OutOfMemoryError(CUDA_OOM)
        return self.net(x)


def test_out_of_memory_becomes_a_clear_error_and_an_oom_record(small_cfg):
    with pytest.raises(OutOfMemory, match="batch_size=32 per device") as caught:
        gc.train(small_cfg, net=OutOfMemoryAbove(16), progress=False, verbose=False)
    assert "2.00 GiB" in str(caught.value)
    run = load_run(caught.value.run_path)
    assert run.status == "oom" and "batch_size=32" in run.meta["error"]


def test_out_of_memory_message_reports_device_memory(monkeypatch):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (512 * 2**20, 80 * 2**30))
    err = out_of_memory(torch.cuda.OutOfMemoryError(CUDA_OOM), 1024, torch.device("cuda:0"))
    assert isinstance(err, OutOfMemory)
    text = str(err)
    assert "batch_size=1024 per device" in text and "cuda:0" in text
    assert "2.00 GiB" in text and "512 MiB of 81,920 MiB were free" in text


def test_sweep_records_the_oom_point_and_goes_on(small_cfg):
    runs = gc.sweep(small_cfg.replace(max_steps=2), "batch_size", [8, 32, 16],
                    net=OutOfMemoryAbove(16), progress=False, verbose=False)
    assert [r.status for r in runs] == ["finished", "oom", "finished"]
    assert [r.config["batch_size"] for r in runs] == [8, 32, 16]


def test_several_devices_refuse_objects_built_in_this_process(small_cfg):
    with pytest.raises(ValueError, match="DistributedDataParallel"):
        gc.train(small_cfg.replace(num_gpus=2), net=gc.get_model("tiny"))


def test_an_option_that_is_not_how_a_run_reports_is_refused_by_name(small_cfg, runs_dir):
    with pytest.raises(TypeError, match=r"verbos=False: not an option .* allowed: runs_dir, "
                                        r"progress, verbose"):
        gc.train(small_cfg, verbos=False, runs_dir=runs_dir)
    with pytest.raises(TypeError, match="devices=None: not an option"):
        gc.record(small_cfg, devices=None)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())   # refused before a record


def test_evaluate_counts_correct_predictions(small_cfg):
    class Oracle(torch.nn.Module):
        def forward(self, x):  # a "network" that reads the answer out of the image
            return torch.nn.functional.one_hot(x[:, 0, 0, 0].long(), 10).float()
    images = torch.zeros(10, 3, 32, 32)
    images[:, 0, 0, 0] = torch.arange(10).float()
    labels = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 0, 0])
    assert gc.evaluate(Oracle(), [(images, labels)], [torch.device("cpu")]) == pytest.approx(0.8)


def test_the_tiny_cnn_learns_the_generated_data():
    """Two short epochs of 1,500 images (~5 s of CPU): the loss falls and the accuracy
    clears chance beyond noise. They land at 17-21% (seeds 0-2; seed 0 read 19.4% on an
    AMD EPYC; 18-24% on twice the images) and the epoch's mean loss falls by 0.11-0.13:
    the bars, chance + 2 standard errors on 500 images (12.7%) and a fall of 0.05, lie far
    below what one CPU's arithmetic moves against another's (an image or two)."""
    cfg = gc.Experiment(name="learns", engine="pytorch", model="tiny", train_size=1500,
                        test_size=500, batch_size=32, epochs=2, num_workers=0, num_gpus=0,
                        optimizer="adam", lr=0.003, optimizer_params={"wd": 0}, augment="none",
                        warmup_steps=2)
    run = gc.train(cfg, progress=False, verbose=False)
    assert not noise.at_chance(run), run.epochs["val_acc"].tolist()
    loss = run.epochs["loss"].tolist()
    assert loss[-1] < loss[0] - 0.05, loss


def test_a_notebooks_own_loop_is_recorded_by_gc_record(small_cfg):
    """The lesson's code is the measured code: a plain PyTorch loop inside gc.record."""
    import torch.nn.functional as F
    parts = gc.build(small_cfg.replace(name="own loop", max_steps=3, dtype="float16"))
    net, train_iter, val_iter, optimizer = parts
    with gc.record(parts, progress=False, verbose=False) as rec:
        for _ in rec.epochs():
            for x, y in rec.batches(train_iter):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    out = net(x)
                    loss = F.cross_entropy(out, y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                rec.step(len(y), loss=loss.detach(), correct=(out.argmax(1) == y).sum())
            rec.end_epoch(evaluate=lambda: gc.evaluate(net, val_iter, parts.devices))
    run = rec.run
    assert run.status == "finished" and len(run.steps) == 3
    assert 0 <= run.epochs.train_acc[0] <= 1 and run.epochs.loss[0] > 0
    assert run.meta["requested"] == {"dtype": "float16"}  # a CPU: bfloat16 ran
    assert run.config["dtype"] == "bfloat16"
    assert "dtype bfloat16 ran, float16 requested" in gc.metrics.label(run)
    assert run.meta["ran"]["network"]["parameters"] == sum(p.numel() for p in net.parameters())


def test_an_own_loader_is_recorded_as_it_runs(small_cfg):
    train_set, _ = gc.load_datasets(small_cfg)
    images, labels = zip(*[train_set[i] for i in range(100)])
    own = torch.utils.data.TensorDataset(torch.stack(images), torch.as_tensor(labels))
    loader = torch.utils.data.DataLoader(own, batch_size=50, num_workers=0, drop_last=True)
    cfg = small_cfg.replace(batch_size=64, num_workers=1)  # the defaults
    run = gc.train(cfg, train_iter=loader, progress=False, verbose=False)
    c = run.config
    assert (c["batch_size"], c["num_workers"], c["train_size"], c["dataset"]) == (50, 0, 100, "own")
    with pytest.raises(ValueError, match=r"batch_size=32 in the Experiment, but the DataLoader "
                                         r"has batch_size=50"):
        gc.train(small_cfg, train_iter=loader, progress=False, verbose=False)


def test_a_rung_that_fails_is_recorded_and_the_ladder_goes_on(monkeypatch, tmp_path, capsys):
    from gpu_course.ladder import Walk, run_ladder
    real_train = gc.train

    def train(cfg, **kwargs):
        if cfg.name == "naive":  # a bug in this rung's code, after its record began
            return real_train(cfg.replace(max_steps=2, epochs=1, model="tiny",
                                          name="broken"), progress=False, verbose=False,
                              on_epoch=lambda row: 1 / 0, runs_dir=kwargs["runs_dir"])
        return real_train(cfg.replace(max_steps=2, model="tiny"), **kwargs)
    monkeypatch.setattr(gc, "train", train)
    runs, paths = run_ladder("pytorch", quick=True, walk=Walk(["naive", "workers"]),
                             runs_dir=tmp_path, train_size=128, test_size=64)
    assert [r.status for r in runs] == ["failed", "finished"]
    assert "rung naive: ZeroDivisionError, going on" in capsys.readouterr().out
    assert paths["html"].exists()


def test_the_bookkeeping_of_a_step_dispatches_no_operator(small_cfg):
    """What gc.record adds to a step costs the device nothing: the steps' losses and
    hits are added up after the epoch's sync (it was once two additions a step)."""
    from tools.op_count import count_ops
    loss, hits = torch.tensor(2.25), torch.tensor([True, False, True, True])
    with gc.record(small_cfg.replace(epochs=1, warmup_steps=0), progress=False,
                   verbose=False) as rec:
        for _ in rec.epochs():
            for _ in rec.batches(range(5)):
                counted = count_ops(lambda: rec.step(4, loss_sum=(loss, 4), correct=hits))
                assert counted.launching == 0 and counted.syncs == 0, counted.by_name
            rec.end_epoch()
    row = rec.run.epochs.iloc[0]
    assert row["loss"] == pytest.approx(2.25) and row["train_acc"] == pytest.approx(0.75)


def test_repeated_rungs_interleave_and_report_their_runs_spread(monkeypatch, tmp_path):
    from gpu_course.analyse import metrics
    from gpu_course.show import report
    from gpu_course.ladder import RUNG_SETTINGS, Walk, run_ladder
    real_train = gc.train
    monkeypatch.setattr(gc, "train", lambda cfg, **kw: real_train(
        cfg.replace(max_steps=12, warmup_steps=2, model="tiny"), **kw))
    runs, paths = run_ladder("pytorch", quick=True, walk=Walk(["naive", "workers"], repeats=2),
                             runs_dir=tmp_path, train_size=512, test_size=64)
    assert [[r.name for r in group] for group in runs] == [["naive"] * 2, ["workers"] * 2]
    started = sorted((r.meta["started_at"], r.name) for group in runs for r in group)
    assert [name for _, name in started] == ["naive", "workers", "naive", "workers"]
    table = report.ladder_table(runs)
    rates = sorted(metrics.samples_per_sec(r) for r in runs[1])
    assert list(table.repeats) == [2, 2]
    assert (table.samples_per_sec_min[1], table.samples_per_sec_max[1]) == tuple(rates)
    assert table.samples_per_sec[1] == pytest.approx(sum(rates) / 2)
    assert "over 2 runs" in report.conclusion(runs, varies=RUNG_SETTINGS)
    assert "runs" in report.format_table(table).splitlines()[0].split()
    assert paths["html"].exists() and len(paths["timelines"]) == 4
    with pytest.raises(ValueError, match=r"repeats=0 must be an integer >= 1"):
        Walk(repeats=0)


def test_threads_set_for_the_run_are_recorded_and_the_previous_count_restored(small_cfg):
    """The thread rung runs and records its intra-op threads, and later runs in
    the process get the count they had before."""
    torch.set_num_threads(2)
    try:
        run = gc.train(small_cfg.replace(threads=1, max_steps=2), progress=False, verbose=False)
        assert run.config["threads"] == 1 and run.meta["ran"]["threads"]["intra_op"] == 1
        assert torch.get_num_threads() == 2
        plain = gc.train(small_cfg.replace(max_steps=2), progress=False, verbose=False)
        assert plain.config["threads"] is None and plain.meta["ran"]["threads"]["intra_op"] == 2
    finally:
        torch.set_num_threads(1)  # the suite's setting (conftest)


def test_the_thread_count_is_restored_when_the_run_fails():
    from gpu_course.tracks.torch.train import intra_op_threads
    before = torch.get_num_threads()
    with pytest.raises(ZeroDivisionError):
        with intra_op_threads(before + 1):
            assert torch.get_num_threads() == before + 1
            1 / 0
    assert torch.get_num_threads() == before


def test_an_own_loop_with_other_threads_than_the_experiment_is_refused(small_cfg):
    with pytest.raises(ValueError, match=r"threads=3 in the Experiment, but this process runs "
                                         r"1 intra-op threads: call torch.set_num_threads\(3\)"):
        gc.record(small_cfg.replace(threads=3), progress=False, verbose=False)
