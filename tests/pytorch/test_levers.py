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
    assert "--levers=triton,fp8: allowed: a comma-separated subset of triton,batch2048,evalgraph,autotune,multistep" in done.stderr


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
    tuned = levers.variants(cfg.replace(graph="static", optimizer="lars"),
                            ["autotune", "multistep"])
    assert tuned["autotune"].autotune and tuned["autotune"].graph_steps == 1
    assert tuned["multistep"].graph_steps == 4 and not tuned["multistep"].autotune


def test_the_rehearsal_runs_the_gpu_ladder_s_rung_small():
    """--quick rehearses on a CPU the rung a GPU measures (the whole step, LARS, the data
    on the device), with few images; the rung as measured is the machine's ladder's."""
    quick = levers.tuned(quick=True)
    assert (quick.graph, quick.optimizer, quick.data_on_gpu) == ("static", "lars", True)
    assert (quick.model, quick.train_size, quick.batch_size) == ("tiny", 256, 32)


def test_a_range_reads_lowest_to_highest_with_its_unit_once():
    assert levers._range([0.2851, 0.473]) == "28.5–47.3%"
    assert levers._range([285.1, 47.3], "{:.1f} ms") == "47.3–285.1 ms"
    assert levers._range([0.5, 0.5004], "{:.0%}") == "50%"
    assert levers._range([float("nan")]) == "-"


def test_the_session_script_in_levers_mode_runs_those_levers_and_packs_their_runs(tmp_path):
    """`gpu_session.sh levers autotune,multistep 1` (issue 28's further levers, a lease of
    their own), rehearsed for real on the CPU: the rung as shipped, autotuned (compiled
    without the search here: no GPU, and recorded so) and four steps a launch; the
    verdicts, the runs and the log come back."""
    import os
    done = subprocess.run(["bash", "tools/gpu_session.sh", "levers", "autotune,multistep", "1"],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OUT": str(tmp_path), "GPU_SESSION_REHEARSE": "1",
                               "GPU_PYTHON": sys.executable})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gpu-session: levers exit 0" in done.stdout
    assert "gpu-session: done; 3 runs recorded" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "levers-log.txt", "levers.tar.gz", "levers.txt", "nvidia-smi.csv"]
    text = (tmp_path / "levers.txt").read_text()
    assert "\nautotune: samples/s " in text and "\nmultistep: samples/s " in text
    with levers.tarfile.open(tmp_path / "levers.tar.gz") as tar:
        tar.extractall(tmp_path / "levers", filter="data")
    from gpu_course.measure.records import load_runs
    runs = {r.name: r for r in load_runs(tmp_path / "levers" / "runs")}
    tuned = runs["tuned, autotune"]
    assert tuned.config["autotune"] and tuned.config["graph"] == "static"
    assert tuned.meta["notes"]["compiled"]["mode"] == "default"   # aot_eager, no GPU
    assert any(d["field"] == "autotune" for d in tuned.meta["downgrades"])
    assert not runs["tuned, as shipped"].config["autotune"]
    grouped = runs["tuned, multistep"]   # the whole step, four a launch (eagerly here)
    assert grouped.meta["notes"]["graph_steps"] == 4
    assert not [d for d in grouped.meta["downgrades"] if d["field"] == "graph_steps"]


def test_the_session_script_asks_which_levers(tmp_path):
    import os
    done = subprocess.run(["bash", "tools/gpu_session.sh", "levers"], cwd=REPO,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "OUT": str(tmp_path), "GPU_PYTHON": sys.executable})
    assert done.returncode != 0 and "levers: name them, e.g. autotune,batch2048" in done.stderr


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
