"""`make gpu-check`'s plan, rehearsed on this CPU with smoke sizes (what CI runs), so the
command a rare GPU session depends on cannot rot: a real subprocess, real notebooks in
real kernels, the real ladder and tests, under the real budget."""
import json
import subprocess
import sys
import tarfile

import nbformat
import pytest

from tools import gpu_check, gpu_evidence


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-check")
    # one notebook and a budget that a slow machine cannot exhaust: the verdicts below do
    # not depend on how fast this machine is (the budget's cuts are tested on their own)
    done = subprocess.run([sys.executable, "-m", "tools.gpu_check", "--rehearse", "--budget",
                           "600", "--notebooks", "01", "--out", str(out)],
                          cwd=gpu_check.REPO, capture_output=True, text=True, timeout=1200)
    return out, done


def test_the_rehearsal_runs_every_step_within_its_budget_and_packs_the_evidence(rehearsal):
    out, done = rehearsal
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # three files come back, whatever ran: a device machine returns only a few
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [gpu_check.ARCHIVE, gpu_check.SUMMARY, "summary.md"])
    summary = json.loads((out / gpu_check.SUMMARY).read_text())
    assert summary["rehearsal"] and summary["budget_s"] == 600
    assert summary["wall_s"] <= summary["budget_s"] + gpu_check.STOP_GRACE_S
    assert [s["name"] for s in summary["steps"]] == list(gpu_check.STEPS)
    steps = {s["name"]: s for s in summary["steps"]}
    assert steps["ladder"]["status"] == "ran" and "finished" in steps["ladder"]["detail"]
    assert steps["tests"]["status"] == "ran"
    notebooks = summary["notebooks"]
    assert [n["name"] for n in notebooks] == ["01_naive.ipynb"]
    assert notebooks[0]["status"] == "ok", notebooks[0]
    assert notebooks[0]["cells_run"] == notebooks[0]["cells"]
    with tarfile.open(out / gpu_check.ARCHIVE) as tar:
        names = tar.getnames()
        executed = nbformat.reads(tar.extractfile(f"notebooks/{notebooks[0]['name']}").read()
                                  .decode(), as_version=4)
    assert {"summary.md", gpu_check.SUMMARY, "machine.json", "ladder.log"} <= set(names)
    assert any(cell.get("outputs") for cell in executed.cells)   # the copy keeps what it printed
    text = (out / "summary.md").read_text()
    assert "(a CPU rehearsal)" in text and "| 01_naive.ipynb | ok |" in text
    assert "needs two or more GPUs" in text
    assert "GPU check: no GPU" in done.stdout


def test_a_rehearsal_cannot_be_committed_as_evidence(rehearsal, tmp_path):
    out, _ = rehearsal
    with pytest.raises(ValueError, match="CPU rehearsal"):
        gpu_evidence.unpack(out / gpu_check.ARCHIVE, tmp_path)


def test_bad_options_are_refused_by_name():
    for args, said in ((["--budget", "5"], "--budget=5 must be 60..3600 seconds"),
                       (["--steps", "ladder,bench"], "--steps=ladder,bench: allowed"),
                       (["--notebooks", "99"], "--notebooks 99: no such PyTorch notebook")):
        done = subprocess.run([sys.executable, "-m", "tools.gpu_check", *args], cwd=gpu_check.REPO,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and said in done.stderr, done.stderr


def test_a_notebook_past_its_time_is_stopped_in_its_cell_and_keeps_what_it_ran(tmp_path):
    """A real kernel: the second cell sleeps past the deadline and is stopped there; the
    executed copy keeps the first cell's output."""
    import time
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('first')"),
                                         nbformat.v4.new_code_cell("import time; time.sleep(60)"),
                                         nbformat.v4.new_code_cell("print('never')")])
    path = tmp_path / "07_slow.ipynb"
    nbformat.write(nb, path)
    result = gpu_check.run_notebook(path, tmp_path / "kept", time.monotonic() + 20)
    assert result["status"] == "stopped in code cell 2 of 3: the notebooks' time was up"
    assert result["cells_run"] == 1 and result["seconds"] < 60
    kept = nbformat.read(tmp_path / "kept" / path.name, as_version=4)
    assert kept.cells[0].outputs[0]["text"] == "first\n"


def test_the_gpu_tests_that_no_committed_check_passed_on_this_gpu_run_first(tmp_path, monkeypatch):
    """The H200's two checks ran out of time before the last four gpu-marked tests: the
    next check on it starts with those (pytest keeps the order of the ids it is given)."""
    from gpu_course.show import report
    checks = tmp_path / "gpu-checks"
    (checks / "pytorch-h200" / "202611270432").mkdir(parents=True)
    cases = "".join(f'<testcase name="{n}"/>' for n in (
        "test_float16_trains_with_a_grad_scaler_on_cuda", "test_cudnn_benchmark_is_on_and_recorded"))
    (checks / "pytorch-h200" / "202611270432" / "gpu_tests.xml").write_text(
        f"<testsuites><testsuite>{cases}<testcase name='test_ddp_with_nccl_at_world_size_one'>"
        "<failure/></testcase></testsuite></testsuites>")
    monkeypatch.setattr(report, "GPU_CHECKS", checks)
    ids = gpu_check.gpu_tests("NVIDIA H200")
    names = [i.rsplit("::", 1)[1] for i in ids]
    assert len(ids) >= 10 and all("::" in i for i in ids)
    assert names[-2:] == ["test_float16_trains_with_a_grad_scaler_on_cuda",
                          "test_cudnn_benchmark_is_on_and_recorded"]
    assert "test_ddp_with_nccl_at_world_size_one" in names[:-2]   # it failed: not verified
    assert gpu_check.gpu_tests(None) == [gpu_check.GPU_TESTS]     # a rehearsal runs the folder


def test_the_session_script_in_ladder_mode_packs_what_the_reference_recorded(tmp_path):
    """`gpu_session.sh ladder 3 wrn16_10` (issue 26's reference, a lease of its own) hands
    tools.reference the walks and network, and packs the records into one archive with
    ladder.txt beside, also when the time limit cut the walk. The reference's own parts are
    tested in tests/test_reference.py; here a stand-in interpreter records what it was
    asked and writes one run, so the shell's plumbing is what runs."""
    import os
    fake = tmp_path / "python"
    fake.write_text("#!/bin/bash\n"
                    "[ \"$1\" = -c ] && exit 0\n"
                    "echo \"$@\" > \"$ASKED\"\n"
                    "while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; shift; done\n"
                    "mkdir -p \"$out/ladder-pytorch-1/r1\" && echo '{}' > \"$out/ladder-pytorch-1/r1/run.json\"\n"
                    "echo table > \"$out/ladder.txt\"\n")
    fake.chmod(0o755)
    out = tmp_path / "out"
    done = subprocess.run(["bash", "tools/gpu_session.sh", "ladder", "3", "wrn16_10"],
                          cwd=gpu_check.REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OUT": str(out), "GPU_PYTHON": str(fake),
                               "ASKED": str(tmp_path / "asked.txt")})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gpu-session: done; 1 runs recorded" in done.stdout
    asked = (tmp_path / "asked.txt").read_text().split()
    assert asked[:4] == ["-m", "tools.reference", "--parts", "machine,ladder"]
    assert "--repeats 3 --model wrn16_10" in " ".join(asked) and "--quick" not in asked
    assert sorted(p.name for p in out.iterdir()) == [
        "ladder-log.txt", "ladder.txt", "nvidia-smi.csv", "reference.tar.gz"]
    with tarfile.open(out / "reference.tar.gz") as tar:
        assert "reference/ladder-pytorch-1/r1/run.json" in tar.getnames()
    # the traces first (lesson 12's before and after), the ladder's network as it is
    again = subprocess.run(["bash", "tools/gpu_session.sh", "ladder", "2", "",
                            "machine,profiles,ladder"], cwd=gpu_check.REPO, capture_output=True,
                           text=True, timeout=120,
                           env={**os.environ, "OUT": str(tmp_path / "again"),
                                "GPU_PYTHON": str(fake), "ASKED": str(tmp_path / "asked.txt")})
    assert again.returncode == 0, again.stdout + again.stderr
    asked = (tmp_path / "asked.txt").read_text()
    assert "--parts machine,profiles,ladder --repeats 2 --out" in asked and "--model" not in asked


def test_the_check_times_its_ladder_by_the_reference_s_resnet20_ladder(tmp_path, monkeypatch):
    """A reference ladder of the other regime (wrn16_10, several times slower), even a
    newer one, does not set how long the check expects its ResNet-20 ladder to take."""
    import fake_runs
    from gpu_course.show import report
    resnet = tmp_path / "pytorch-h200" / "ladder-pytorch-20261123-050126"
    wrn = tmp_path / "pytorch-h200-wrn16_10" / "ladder-pytorch-20261201-050126"
    fake_runs.write_run(resnet, "naive", config={"model": "resnet20"})
    fake_runs.write_run(wrn, "naive", config={"model": "wrn16_10"})
    for folder, seconds in ((resnet, 30), (wrn, 300)):
        run_json = next(folder.glob("*/run.json"))
        meta = json.loads(run_json.read_text())
        meta.update(started_at="2026-11-23T05:01:26", ended_at=f"2026-11-23T05:0{1 + seconds // 60}:"
                    f"{26 + seconds % 60:02d}")
        run_json.write_text(json.dumps(meta))
    monkeypatch.setattr(report, "REFERENCE_ROOT", tmp_path)
    assert gpu_check.reference_ladder_seconds() == 30
