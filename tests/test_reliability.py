"""Faults in runs, records, the monitor and SageMaker's entry, in each environment (runs
train with its framework): no false record, no hang, every bad input a clear error. Real
files and real subprocesses; the fake pynvml where the fault is the driver. The data
writers' faults are framework-free: tests/test_data_faults.py."""
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import pytest

from fake_pynvml import FakePynvml, NVMLError_LibraryNotFound, install
from support import REPO, foreign_cifar, no_bigger_than, run_cli

from gpu_course.measure import guards, monitor, records
from gpu_course.config import Experiment, smoke_mode
from gpu_course.data import cifar
from gpu_course.measure.harness import Harness, Output

TINY = dict(name="t", model="tiny", train_size=128, test_size=32, batch_size=32, epochs=1,
            num_workers=0, warmup_steps=0, monitor_interval=0.05)


# -- config: clear errors ------------------------------------------------------------------
@pytest.mark.parametrize("changes, words", [
    (dict(lr=math.inf), "lr=inf must be a finite number"),
    (dict(optimizer_params={"wd": math.inf}), "wd=inf must be a finite number >= 0"),
    (dict(lr="0.1"), "lr='0.1' must be a number, not str"),
    (dict(monitor_interval=math.inf), "monitor_interval=inf must be a finite number"),
    (dict(seed=2**40), "allowed: 0..4294967295"),
    (dict(name=None), "name=None must be a non-empty string"),
    (dict(name=""), "name='' must be a non-empty string"),
    (dict(optimizer_params=(("batch_scale",),)), "must be a dict or (name, value) pairs"),
    (dict(optimizer_params="batch_scale=4"), "must be a dict or (name, value) pairs"),
    (dict(optimizer_params=5), "must be a dict or (name, value) pairs"),
    (dict(optimizer="adamw"), "'adamw' needs engine='pytorch'"),
    (dict(engine="pytorch", pin_memory="maybe"), "pin_memory='maybe' must be True or False"),
    (dict(optimizer_params=(("momentum", "high"),)),
     "optimizer_params: momentum='high' must be a number, true/false or a tuple"),
    (dict(optimizer_params={"clip_gradient": None}), "clip_gradient=None must be a number"),
    (dict(optimizer_params={"betas": ("a", 1)}), "betas=('a', 1) must be a number"),
    (dict(lr_scheduler="multifactor", lr_steps=5), "lr_steps=5 must be increasing epoch numbers > 0"),
    (dict(optimizer="lbsgd", optimizer_params={"warmup_strategy": "fast"}),
     "warmup_strategy='fast' is not allowed; allowed: linear, power2, sqrt, lars"),
])
def test_bad_config_values_are_clear_errors(changes, words):
    with pytest.raises(ValueError, match=None) as err:
        Experiment(**changes)
    assert words in str(err.value)


def test_a_stored_config_with_wrong_shapes_is_the_configs_error():
    stored = {**Experiment().to_dict(), "lr_scheduler": "multifactor"}
    for steps in (5, "3", [[2, 4]]):
        with pytest.raises(ValueError, match="lr_steps="):
            Experiment.from_dict({**stored, "lr_steps": steps})
    assert Experiment.from_dict({**stored, "lr_steps": [2, 4]}).lr_steps == (2, 4)
    back = Experiment.from_dict(json.loads(Experiment(
        engine="pytorch", optimizer="adam", optimizer_params={"betas": (0.9, 0.99)}).to_json()))
    assert back.optimizer_params == (("betas", (0.9, 0.99)),)


def test_a_symlink_loop_as_data_dir_is_named(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(ValueError, match=f"data_dir='{tmp_path / 'a'}' is a loop of links"):
        Experiment(dataset="folder", data_dir=str(tmp_path / "a"))
    for dataset in ("folder", "cifar10"):
        out = run_cli("run", "--dataset", dataset, "--data-dir", tmp_path / "a", "--epochs", 1)
        assert out.returncode == 2 and "is a loop of links" in out.stderr, out.stderr


def test_optimizer_params_from_the_command_line_are_checked_by_the_config():
    out = run_cli("run", "--optimizer-params", "momentum=high", "--epochs", 1)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "optimizer_params: momentum='high' must be a number" in out.stderr


def test_a_stored_non_finite_value_loads_back_or_is_a_clear_error(tmp_path):
    stored = json.loads(json.dumps({**Experiment().to_dict(), "lr": "inf"}))
    with pytest.raises(ValueError, match="lr=inf must be a finite number"):
        Experiment.from_dict(stored)
    with pytest.raises(ValueError, match="warmup_epochs=nan must be a finite number"):
        Experiment.from_dict({**Experiment().to_dict(), "warmup_epochs": None})  # JSON's null
    assert Experiment.from_dict(json.loads(Experiment(lr=0.5).to_json())).lr == 0.5
    # where a non-finite value is allowed, it comes back as it was (JSON has no inf)
    cfg = Experiment(lr_scheduler="multifactor", lr_steps=(2, 4),
                     optimizer_params=(("clip_gradient", math.inf),))
    stored = json.loads(json.dumps(cfg.to_dict(), allow_nan=False))
    assert Experiment.from_dict(stored) == cfg
    assert Experiment.from_dict(stored).optimizer_params[0][1] == math.inf
    # an infinite step is no epoch: refused by name (it overflowed in the scheduler)
    with pytest.raises(ValueError, match=r"lr_steps=\(2, inf\) must be increasing epoch numbers > 0"):
        Experiment(lr_scheduler="multifactor", lr_steps=(2, math.inf))
    record = records.RunRecord(cfg.to_dict(), records.Ran("gluon"), runs_dir=tmp_path,
                               hardware_info={"gpus": []})
    record.finish()
    assert Experiment.from_dict(records.load_run(record.path).config) == cfg


@pytest.mark.parametrize("text, on", [("1", True), ("yes", True), ("TRUE", True),
                                      ("on", True), ("0", False), ("no", False),
                                      ("False", False), ("", False)])
def test_smoke_switch_spellings(text, on):
    assert smoke_mode(text) is on


def test_smoke_switch_refuses_what_it_does_not_know(monkeypatch):
    monkeypatch.setenv("GPU_COURSE_SMOKE", "maybe")
    with pytest.raises(ValueError, match="GPU_COURSE_SMOKE='maybe' is not allowed; allowed: "):
        smoke_mode()


# -- records that tell the truth ---------------------------------------------------------
def test_a_corrupt_run_json_is_skipped_with_a_warning_naming_it(runs_dir):
    good = records.RunRecord({"name": "good"}, records.Ran("gluon"), runs_dir=runs_dir,
                             hardware_info={"gpus": []})
    good.finish()
    bad = runs_dir / "ladder" / "20260101-000000-bad-0000" / "run.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"run_id": ')  # cut off mid-write by an older version
    with pytest.warns(UserWarning, match=str(bad)):
        runs = records.load_runs(runs_dir)
    assert [r.name for r in runs] == ["good"]
    out = run_cli("runs", "--runs-dir", runs_dir)
    assert out.returncode == 0 and good.run_id in out.stdout and str(bad) in out.stderr


def test_a_run_whose_csv_is_not_text_is_named_by_its_file_and_skipped(runs_dir):
    from fake_runs import write_run
    good = write_run(runs_dir, "good")
    bad = write_run(runs_dir, "bad", index=1)
    (bad / "epochs.csv").write_bytes(b"\xff\xfe\x00garbage\n\x01")
    with pytest.warns(UserWarning, match=f"skipping {bad / 'run.json'}: unreadable run record "
                                         f"\\({bad / 'epochs.csv'} is not a readable CSV file"):
        assert [r.path for r in records.load_runs(runs_dir)] == [good]
    done = run_cli("diagnose", bad)
    assert done.returncode == 2 and f"{bad / 'epochs.csv'} is not a readable CSV file" in done.stderr


def test_diagnose_finds_a_ladder_run_at_any_depth(runs_dir):
    from fake_runs import write_run
    path = write_run(runs_dir / "ladder-20261121" / "rungs", "naive")
    out = run_cli("diagnose", path.name, "--runs-dir", runs_dir)
    assert out.returncode == 0, out.stderr


def test_write_atomic_leaves_no_temporary_file_when_the_disk_fails(tmp_path):
    code = ("import sys; from gpu_course.measure.records import write_atomic\n"
            "write_atomic(sys.argv[1], 'x' * 10000)")
    out = subprocess.run([sys.executable, "-c", code, tmp_path / "run.json"], cwd=REPO,
                         capture_output=True, text=True, timeout=60,
                         preexec_fn=no_bigger_than(1000))
    assert out.returncode != 0 and "File too large" in out.stderr
    assert list(tmp_path.iterdir()) == []


HARNESS_RUN = """
import sys, time
from gpu_course.config import Experiment
from gpu_course.measure.harness import Harness, Output
cfg = Experiment(name="full", epochs=50, monitor_interval=0.01, warmup_steps=0)
with Harness(cfg, output=Output(runs_dir=sys.argv[1], progress=False)) as h:
    for epoch in h.epochs():
        for batch in h.batches(range(3)):
            time.sleep(0.02)
            h.step(64, loss=1.0)
        h.end_epoch()
"""


def test_a_file_limit_mid_run_gives_status_failed_saying_so(tmp_path):
    """The monitor's host.csv grows past the limit a few epochs in: the record says
    what happened, keeps the finished epochs, and leaves no temporary file."""
    out = subprocess.run([sys.executable, "-c", HARNESS_RUN, tmp_path], cwd=REPO,
                         capture_output=True, text=True, timeout=120,
                         preexec_fn=no_bigger_than(8000))
    assert out.returncode != 0
    run = records.load_runs(tmp_path)[0]
    assert run.status == "failed" and "file too large" in run.meta["error"]
    assert "while writing" in run.meta["error"] and str(tmp_path) in run.meta["error"]
    assert 0 < len(run.epochs) < 50 and not list(tmp_path.rglob("*.tmp"))


def test_non_finite_loss_stops_the_run_as_diverged(runs_dir):
    cfg = Experiment(**{**TINY, "lr": 1e30, "epochs": 3})
    with pytest.raises(guards.Diverged, match=r"lr=1e\+30"):
        with Harness(cfg, output=Output(progress=False, verbose=False, monitor=False)) as h:
            for _ in h.epochs():
                for _ in h.batches(range(2)):
                    h.step(32, loss=float("nan"))
                h.end_epoch()
    run = records.load_runs(runs_dir)[0]
    assert run.status == "diverged" and len(run.epochs) == 1 and "lr=1e+30" in run.meta["error"]
    with pytest.raises(guards.Diverged, match="wd=0.5"):
        guards.check_loss(math.inf, 0, Experiment(optimizer_params={"wd": 0.5}))


def test_a_run_whose_loss_grows_finite_says_it_learned_nothing(tmp_path):
    """wd=1e8 for one step an epoch: the loss stays a number (1e14), so nothing
    diverged, but the run is worthless: the record and a printed line say so."""
    out = run_cli("run", "--model", "tiny", "--train-size", 128, "--test-size", 32,
                  "--batch-size", 32, "--epochs", 2, "--max-steps", 1, "--num-workers", 0,
                  "--optimizer-params", "wd=1e8", "--no-progress", "--runs-dir", tmp_path)
    assert out.returncode == 0, out.stderr
    run = records.load_runs(tmp_path)[0]
    said = run.meta["notes"]["learning"]
    assert "learned nothing" in said and "wd=100000000.0" in said
    assert f"Did not learn: {said}" in out.stdout


@pytest.mark.parametrize("losses, words", [([2.3, 2.1, 1.9], None), ([2.3], None),
                                           ([2.3, 2.4], "did not fall"),
                                           ([2.3, 40.0], "grew from 2.3"),
                                           ([2.3, None, math.nan], None)])
def test_what_the_losses_say_about_learning(losses, words):
    said = guards.not_learning(losses, Experiment(lr=0.5))
    assert (said is None) if words is None else (words in said)


STOP_RUN = HARNESS_RUN.replace("time.sleep(0.02)", "time.sleep(0.05)").replace(
    "h.end_epoch()", "h.end_epoch(); print('epoch done', flush=True)")
SAYS = {signal.SIGTERM: "stopped by SIGTERM", signal.SIGINT: "interrupted by the user (Ctrl-C)"}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_ctrl_c_ends_a_run_keeping_its_finished_epochs(tmp_path, signum):
    proc = subprocess.Popen([sys.executable, "-c", STOP_RUN, tmp_path], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while "epoch done" not in proc.stdout.readline():  # after the notices and epoch line
        assert proc.poll() is None, proc.stderr.read()
    os.kill(proc.pid, signum)
    proc.communicate(timeout=30)
    assert proc.returncode != 0
    run = records.load_runs(tmp_path)[0]
    assert run.status == "interrupted" and SAYS[signum] in run.meta["error"]
    assert len(run.epochs) >= 1


STOP_IN_DEL = HARNESS_RUN.replace("time.sleep(0.02)", """
            class Array:  # like an NDArray: a __del__ that runs inside the step
                def __del__(self):
                    if epoch == 1 and batch == 1:
                        os.kill(os.getpid(), int(sys.argv[2]))
                        time.sleep(0.1)  # the signal lands here, inside __del__
            Array()""").replace("import sys, time", "import os, signal, sys, time")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_inside_a_del_still_stops_the_run_at_the_next_step(tmp_path, signum):
    """Python ignores an exception raised in __del__ (it prints it): a handler that
    raised from wherever the signal landed left the job training (Ctrl-C landed in a fork
    hook so). The handler only asks; the loop stops at the next step."""
    out = subprocess.run([sys.executable, "-c", STOP_IN_DEL, tmp_path, str(int(signum))],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "Exception ignored" not in out.stderr, out.stderr
    run = records.load_runs(tmp_path)[0]
    assert run.status == "interrupted" and SAYS[signum] in run.meta["error"]
    assert len(run.epochs) == 1  # epoch 1 stopped after its second step


def test_a_process_forked_during_a_run_leaves_ctrl_c_to_it_and_ends_on_sigterm(tmp_path):
    """A loader worker forked while the run's handlers are installed ignores Ctrl-C (a
    terminal sends it to every process; the run ends its workers) and dies of SIGTERM
    (the stop request would never be read there)."""
    ready, started = os.pipe()
    with guards.stop_requests():
        pid = os.fork()
        if pid == 0:  # the child: say it runs, then wait to be ended
            os.write(started, b"1")
            time.sleep(30)
            os._exit(0)
        os.read(ready, 1)
        os.kill(pid, signal.SIGINT)
        time.sleep(0.2)
        assert os.waitpid(pid, os.WNOHANG) == (0, 0)   # still running
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
        assert not guards.pending_stop()   # the child's signals are not this process's
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


def _ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(1000):   # Python runs the handler between these steps
        pass


def test_ctrl_c_in_a_run_asks_a_second_raises_at_once_and_the_handler_comes_back():
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt, match=r"\(Ctrl-C twice\)"):
        with guards.stop_requests():
            _ctrl_c()   # asks the loop to stop: nothing raised here
            steps = 1
            _ctrl_c()   # the loop did not obey: a second one raises here
            steps = 2
    assert steps == 1 and signal.getsignal(signal.SIGINT) is before
    with pytest.raises(KeyboardInterrupt, match=r"\(Ctrl-C\)"):
        with guards.stop_requests():
            _ctrl_c()
            steps = 3   # a request the loop never checked is raised on leaving
    assert steps == 3 and signal.getsignal(signal.SIGINT) is before


def test_ctrl_c_while_a_run_is_set_up_ends_it_before_its_record(tmp_path):
    """Pressed while the network and loaders are made (a run's setup holds the request,
    as gc.train does): the run never starts, and nothing is recorded."""
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt, match=r"\(Ctrl-C\)"):
        with guards.stop_requests():
            _ctrl_c()   # during the setup: only asks
            with Harness(Experiment(name="t"), output=Output(runs_dir=tmp_path,
                                                               progress=False)):
                pytest.fail("the run started")
    assert list(tmp_path.iterdir()) == [] and signal.getsignal(signal.SIGINT) is before


def test_off_the_main_thread_the_signals_are_left_alone():
    before, seen = signal.getsignal(signal.SIGINT), []

    def run():
        with guards.stop_requests():
            seen.append(signal.getsignal(signal.SIGINT))
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [before]


# -- the monitor never hangs a run ---------------------------------------------------------
def test_a_blocking_gpu_query_neither_hangs_train_nor_goes_unrecorded(monkeypatch, runs_dir):
    fake = install(monkeypatch, FakePynvml(1))
    wedged = threading.Event()
    release = threading.Event()
    answer = fake.nvmlDeviceGetUtilizationRates

    def blocking(handle):  # a wedged driver: the third query never comes back
        if fake.gpus[0].samples >= 2:
            wedged.set()
            release.wait(60)
        return answer(handle)
    monkeypatch.setattr(fake, "nvmlDeviceGetUtilizationRates", blocking)
    monkeypatch.setattr(monitor, "STOP_WAIT_S", 0.5)
    start = time.monotonic()
    with Harness(Experiment(**TINY), output=Output(progress=False, verbose=False)) as h:
        for _ in h.epochs():
            assert wedged.wait(10)
            for _ in h.batches(range(2)):
                h.step(32, loss=1.0)
            h.end_epoch()
    release.set()
    assert time.monotonic() - start < 10
    assert h.run.status == "finished" and "stalled" in h.run.meta["notes"]["monitor"]


def test_no_gpu_is_one_line_not_a_warning(monkeypatch, capsys):
    install(monkeypatch, FakePynvml(1, init_error=NVMLError_LibraryNotFound))
    from gpu_course.measure import harness
    harness._SAID.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        for _ in range(2):
            Harness(Experiment(**TINY), output=Output(progress=False, record=False))
    out = capsys.readouterr().out
    assert out.count("NVML unavailable") == 1 and "Warning" not in out


# -- SageMaker entry ------------------------------------------------------------------------
@pytest.mark.parametrize("name, value", [("SM_HOSTS", "algo-1,algo-2"),
                                         ("SM_HOSTS", '{"a": 1}'),
                                         ("WORLD_SIZE", "two"), ("WORLD_SIZE", "0"),
                                         ("SM_NUM_GPUS", "-1"), ("SM_NUM_GPUS", "1.5")])
def test_sagemaker_environment_that_is_not_what_sagemaker_sends(tmp_path, name, value, capsys):
    from gpu_course_sagemaker import entry as entry
    env = {"SM_OUTPUT_DIR": str(tmp_path), name: value}
    assert entry.main([], env) == 2
    failure = (tmp_path / entry.FAILURE_FILE).read_text()
    assert f"{name}={value!r}" in failure and name in capsys.readouterr().err


@pytest.mark.parametrize("name, inside, words", [
    ("SM_OUTPUT_DATA_DIR", "", "is a file: it must name a folder the job can write"),
    ("SM_MODEL_DIR", "", "is a file: it must name a folder the job can write"),
    ("SM_MODEL_DIR", "model", "cannot be made (Not a directory)")])
def test_sagemaker_output_folders_that_cannot_be_written_stop_before_training(
        tmp_path, name, inside, words, capsys):
    from gpu_course_sagemaker import entry as entry
    a_file = tmp_path / "file"
    a_file.write_text("x")
    where = a_file / inside if inside else a_file
    env = {"SM_OUTPUT_DIR": str(tmp_path / "out"), "SM_NUM_GPUS": "0",
           "SM_OUTPUT_DATA_DIR": str(tmp_path / "data"), name: str(where)}
    assert entry.main(["--model", "tiny"], env) == 2
    failure = (tmp_path / "out" / entry.FAILURE_FILE).read_text()
    assert f"{name}={where} {words}" in failure and name in capsys.readouterr().err
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())


def test_sagemaker_channel_with_other_data_is_not_replaced_by_generated(tmp_path):
    from gpu_course_sagemaker import entry as entry
    channel = tmp_path / "training"
    foreign_cifar(channel)
    env = {"SM_OUTPUT_DIR": str(tmp_path / "out"), "SM_CHANNEL_TRAINING": str(channel),
           "SM_NUM_GPUS": "0"}
    assert entry.main([], env) == 2
    assert "dataset to cifar10" in (tmp_path / "out" / entry.FAILURE_FILE).read_text()
    assert sorted(p.name for p in channel.iterdir()) == [cifar.FOLDER_NAME]

