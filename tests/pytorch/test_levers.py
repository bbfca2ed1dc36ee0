"""tools.levers, rehearsed on this CPU: the tuned rung as shipped and with each lever,
walked in turn (a real subprocess, real runs), each lever judged against the rung."""
import subprocess
import sys
import tarfile

from gpu_course.measure.records import load_runs
from tools import levers

REPO = levers.Path(levers.__file__).resolve().parents[1]


def test_the_levers_alternate_with_the_rung_as_shipped_and_are_judged_against_it(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tools.levers", "--quick", "--repeats", "2",
                           "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = load_runs(tmp_path / "runs")
    assert [(r.name, r.config["seed"]) for r in runs] == [
        ("tuned, as shipped", 0), ("tuned, triton", 0), ("tuned, batch2048", 0),
        ("tuned, as shipped", 1), ("tuned, triton", 1), ("tuned, batch2048", 1)]
    assert {r.config["convolutions"] for r in runs if "triton" in r.name} == {"triton"}
    assert {r.config["batch_size"] for r in runs if "batch" in r.name} == {64}   # 2 x 32
    text = (tmp_path / "levers.txt").read_text()
    for lever in levers.LEVERS:
        assert f"\n{lever}: samples/s ×" in text and "over 2 runs) against the rung as shipped" in text
    with tarfile.open(tmp_path / "levers.tar.gz") as tar:
        assert sum(name.endswith("run.json") for name in tar.getnames()) == 6


def test_an_unknown_lever_is_refused_naming_those_allowed(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tools.levers", "--levers", "triton,fp8",
                           "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "--levers=triton,fp8: allowed: a comma-separated subset of triton,batch2048" in done.stderr
