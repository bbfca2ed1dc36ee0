"""`gpu-course watch -- COMMAND`: a real command watched on the CPU, its signals and exit
status, the GPU verdicts on a fake NVML, and the clear line for a command that is
missing or ends at once."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from support import REPO, run_cli

sys.path.insert(0, str(Path(__file__).parent))  # for fake_pynvml, whatever pytest's import mode
from fake_pynvml import FakePynvml, install  # noqa: E402

from gpu_course.measure import watch  # noqa: E402
from gpu_course.measure.records import load_runs  # noqa: E402

SLOW_LOADER = """
import time, torch
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self): return 96
    def __getitem__(self, i):
        time.sleep(0.004)            # a slow decode: 32 ms a batch of 8
        return torch.zeros(4), i % 2

net = torch.nn.Linear(4, 2)
for epoch in range(2):
    for x, y in DataLoader(Slow(), batch_size=8):
        net(x).sum().backward()
raise SystemExit(3)
"""


def script(tmp_path, text, name="job.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_slow_loader_is_named_from_its_measured_data_wait(tmp_path, runs_dir):
    done = run_cli("watch", "--interval", "0.2", "--", sys.executable,
                   script(tmp_path, SLOW_LOADER), env={"MPLBACKEND": "Agg"})
    assert done.returncode == 3, done.stderr            # the script's own status
    assert "the input side is the limit" in done.stdout, done.stdout
    assert "GPU: none to sample" in done.stdout or "GPU: busy" in done.stdout
    run, = load_runs(runs_dir)
    assert (run.path / "timeline.png").stat().st_size > 0
    assert len(run.epochs) == 2 and int(run.epochs.steps.sum()) == 24   # both passes, every step
    assert run.status == "failed" and run.meta["notes"]["exit_status"] == 3
    assert (run.path / "process.csv").exists() and (run.path / "host.csv").exists()


TRAPS = """
import signal, sys, time
from pathlib import Path
def stop(signum, frame):
    Path(sys.argv[1]).write_text(signal.Signals(signum).name)
    raise SystemExit(7)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
print("ready", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT])
def test_signals_reach_the_command_and_its_status_comes_back(tmp_path, sent):
    said = tmp_path / "said"
    watcher = subprocess.Popen([sys.executable, "-m", "gpu_course.cli", "watch", "--interval",
                                "0.2", "--", sys.executable, str(script(tmp_path, TRAPS)), str(said)],
                               cwd=REPO, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "MPLBACKEND": "Agg"})
    assert watcher.stdout.readline().strip() == "ready"
    watcher.send_signal(sent)
    out, _ = watcher.communicate(timeout=120)
    assert said.read_text() == sent.name           # the command got it, once, and stopped
    assert watcher.returncode == 7, out
    run, = load_runs()
    assert run.meta["notes"]["exit_status"] == 7 and (run.path / "gpu.csv").exists() \
        or (run.path / "host.csv").exists()


def test_a_missing_command_says_so(capsys, runs_dir):
    assert watch.watch(["no-such-command-here", "--flag"]) == watch.NOT_FOUND
    assert "no-such-command-here: command not found" in capsys.readouterr().err
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_no_command_is_refused():
    with pytest.raises(ValueError, match="no command to watch"):
        watch.watch([])


def test_a_command_that_ends_at_once_gives_one_clear_line(capsys, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    status = watch.watch([sys.executable, "-c", "raise SystemExit(4)"], watch.Options(interval=5))
    out = capsys.readouterr().out
    assert status == 4 and "exited with status 4" in out
    assert "ended before the monitor could see it work" in out


@pytest.mark.parametrize("util, sleeps, limit", [(97, 1.0, watch.Limit.DEVICE),
                                                  (3, 1.0, watch.Limit.WAITS)])
def test_gpu_verdicts_on_a_fake_nvml(monkeypatch, capsys, util, sleeps, limit):
    fake = FakePynvml(gpus=1)
    fake.gpus[0].util_gpu = util
    install(monkeypatch, fake)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setattr(watch, "CPU_SATURATED", 101)   # other programs' load is not the job's
    status = watch.watch([sys.executable, "-c", f"import time; time.sleep({sleeps})"],
                         watch.Options(interval=0.1))
    out = capsys.readouterr().out
    assert status == 0
    assert f"GPU: busy {util}% of the time" in out and watch.SAYS[limit] in out, out


def job(util, cores, busiest, machine=10.0):
    return watch.Job(10.0, 0, {"gpu_util_mean": util, "cpu_percent_mean": machine}, 1.0, cores,
                     busiest, 2, run=None)


def test_an_idle_gpu_beside_a_busy_host_is_fed_too_slowly():
    assert job(20.0, 0.3, 0.98).limit() is watch.Limit.FED        # one Python thread's core
    assert job(20.0, os.cpu_count(), 0.5).limit() is watch.Limit.FED   # every core
    assert job(20.0, 0.3, 0.3).limit() is watch.Limit.WAITS
    assert job(None, 0.3, 0.98).limit() is watch.Limit.CPU_BUSY
    assert job(None, 0.1, 0.1).limit() is watch.Limit.CPU_IDLE


def test_a_machine_other_programs_saturate_is_not_blamed_on_the_command():
    crowded = job(None, 0.4, 0.4, machine=98.0)
    assert crowded.limit() is watch.Limit.CPU_BUSY and not crowded.held_cores
    assert "by other programs more than by the command" in crowded.view()
    held = job(None, 0.3, 0.98, machine=98.0)
    assert held.held_cores and held.view().endswith("by the step or by the loader")


def test_a_command_without_a_dataloader_still_runs_its_own_sitecustomize(tmp_path, capfd,
                                                                          monkeypatch):
    (tmp_path / "sitecustomize.py").write_text("import os\nos.environ['CHAINED'] = 'yes'\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    command = [sys.executable, "-c", "import os, time; time.sleep(0.5); print('chained', os.environ['CHAINED'])"]
    assert watch.watch(command, watch.Options(interval=0.1)) == 0
    out = capfd.readouterr().out
    assert "chained yes" in out and "No DataLoader was timed" in out
