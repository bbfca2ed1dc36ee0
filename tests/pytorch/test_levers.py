"""tools.levers' arguments. Its walk (the tuned rung as shipped and with each lever, in
turn, real runs in a real subprocess, each lever judged against the rung) is rehearsed
within tools/gpu_session.sh: tests/pytorch/test_gpu_check.py."""
import subprocess
import sys

from tools import levers

REPO = levers.Path(levers.__file__).resolve().parents[1]


def test_an_unknown_lever_is_refused_naming_those_allowed(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tools.levers", "--levers", "triton,fp8",
                           "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "--levers=triton,fp8: allowed: a comma-separated subset of triton,batch2048,evalgraph" in done.stderr


def test_each_lever_changes_one_setting_of_the_rung_as_shipped():
    from gpu_course.config import Experiment
    cfg = Experiment(name="tuned", engine="pytorch", batch_size=1024, data_on_gpu=True,
                     num_workers=0)
    full = levers.variants(cfg, ["triton", "batch2048"])
    assert list(full) == [levers.AS_SHIPPED, "triton", "batch2048"]
    assert full["triton"].convolutions == "triton" and full["triton"].batch_size == 1024
    assert full["batch2048"].batch_size == 2048 and full["batch2048"].convolutions == "cudnn"
    quick = levers.variants(cfg.replace(batch_size=32), ["batch2048"], quick=True)
    assert quick["batch2048"].batch_size == 64   # the rehearsal's few images: twice the batch


def test_a_sigterm_midway_leaves_the_verdicts_of_the_runs_that_ended(tmp_path):
    """A GPU session runs the levers under `timeout`: stopped midway, they still write
    levers.txt and levers.tar.gz for what ran, say so, and exit 1."""
    import os
    import signal
    import time
    log = tmp_path / "log.txt"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-u", "-m", "tools.levers", "--quick",
                                 "--levers", "evalgraph", "--repeats", "3", "--out",
                                 str(tmp_path / "out")], cwd=REPO, stdout=out,
                                stderr=subprocess.STDOUT, env={**os.environ,
                                                               "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + 300
        while "=== as shipped (walk 2 of 3)" not in log.read_text():   # 2 runs ended
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 1, log.read_text()[-3000:]
    text = (tmp_path / "out" / "levers.txt").read_text()
    assert "stopped by SIGTERM: the verdicts cover the" in text
    assert "\nevalgraph: samples/s " in text   # one run of each had ended
    with levers.tarfile.open(tmp_path / "out" / "levers.tar.gz") as tar:
        names = tar.getnames()
    assert sum(n.endswith("run.json") for n in names) >= 2
