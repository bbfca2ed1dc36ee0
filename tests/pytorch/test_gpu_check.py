"""`make gpu-check` and tools/gpu_session.sh, rehearsed on this CPU: the plan as the real
command prints it (no notebook runs for that), one real rehearsal that executes lesson 01
in a real kernel and packs the evidence, and the session script's own plumbing."""
import json
import os
import subprocess
import sys
import tarfile

import nbformat
import pytest

from tools import gpu_check, gpu_evidence

LESSONS = sorted(p.name for p in gpu_check.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def gpu_check_command(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "tools.gpu_check", *args], cwd=gpu_check.REPO,
                          capture_output=True, text=True, timeout=timeout)


def planned(stdout: str) -> list[tuple[str, str]]:
    """(step, notebook) for each line of a printed plan."""
    rows = []
    for line in stdout.splitlines()[1:]:
        words = line.split()
        rows.append((words[1], words[2] if words[2].endswith(".ipynb") else ""))
    return rows


def test_the_plan_runs_every_notebook_at_smoke_size_before_any_at_the_check_s():
    done = gpu_check_command("--rehearse", "--plan")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("gpu-check plan on no GPU (a rehearsal: smoke sizes), "
                                  f"a budget of {gpu_check.REHEARSAL_BUDGET_S} s:")
    rows = planned(done.stdout)
    assert len(LESSONS) == 17
    smoke = [n for step, n in rows if step == "smoke"]
    assert smoke == sorted(p.name for p in gpu_check.NOTEBOOKS.glob("*.ipynb"))   # lesson order
    assert set(LESSONS) <= set(smoke)
    assert [step for step, _ in rows] == ["smoke"] * len(smoke) + ["check"] * len(smoke) + [
        "ladder", "tests", "smi"]
    assert sorted(n for step, n in rows if step == "check") == smoke
    ends = [float(line.split(" by ")[1].split()[0]) for line in done.stdout.splitlines()[1:]]
    assert ends == sorted(ends) and ends[-1] < gpu_check.REHEARSAL_BUDGET_S


def test_on_a_gpu_the_check_pass_starts_with_the_lessons_never_executed_there():
    """Planned for the committed H200 checks: the lessons no check executed there come
    first, then those whose copy ended in an error, then those stopped for time, and the
    lessons whose copy ran without error last."""
    from gpu_course.show.report import executed_notebooks
    standing = executed_notebooks().get("pytorch-h200", {})
    done = gpu_check_command("--plan", "NVIDIA H200", "--steps", "smoke,check")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("gpu-check plan on NVIDIA H200, a budget of 480 s:")
    check = [n for step, n in planned(done.stdout) if step == "check"]

    def rank(name):
        said = standing.get(name, {}).get("status")
        return 0 if said is None else 3 if said == "ok" else 2 if said.startswith("stopped") else 1
    assert [rank(n) for n in check] == sorted(rank(n) for n in check)
    assert [n for n in check if rank(n) == 0] == sorted(set(LESSONS) - set(standing))
    assert "(never executed on this GPU)" in done.stdout


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    """The one real execution: the smoke pass of lesson 01 in a real kernel, under a
    budget that a slow machine cannot exhaust (the budget's cuts are tested on their own)."""
    out = tmp_path_factory.mktemp("gpu-check")
    done = gpu_check_command("--rehearse", "--budget", "600", "--notebooks", "01",
                             "--steps", "smoke", "--out", str(out), timeout=900)
    return out, done


def test_the_rehearsal_executes_the_notebook_and_packs_the_evidence(rehearsal):
    out, done = rehearsal
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # three files in --out; everything else is inside the archive
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [gpu_check.ARCHIVE, gpu_check.SUMMARY, "summary.md"])
    summary = json.loads((out / gpu_check.SUMMARY).read_text())
    assert summary["rehearsal"] and summary["budget_s"] == 600
    assert summary["wall_s"] <= summary["budget_s"] + gpu_check.STOP_GRACE_S
    assert summary["plan"] == [{"step": "smoke", "notebook": "01_naive.ipynb", "why": ""}]
    assert [s["name"] for s in summary["steps"]] == ["smoke"]
    assert summary["notebooks"] == []   # no pass at the check's size was asked for
    (notebook,) = summary["smoke"]
    assert notebook["status"] == "ok" and notebook["size"] == "smoke", notebook
    assert notebook["cells_run"] == notebook["cells"]
    with tarfile.open(out / gpu_check.ARCHIVE) as tar:
        names = tar.getnames()
        executed = nbformat.reads(tar.extractfile("notebooks-smoke/01_naive.ipynb").read()
                                  .decode(), as_version=4)
    assert {"summary.md", gpu_check.SUMMARY, "machine.json"} <= set(names)
    assert any(cell.get("outputs") for cell in executed.cells)   # the copy keeps what it printed
    text = (out / "summary.md").read_text()
    assert "(a CPU rehearsal)" in text and "## Notebooks at smoke size" in text
    assert "| 01_naive.ipynb | ok |" in text and "needs two or more GPUs" in text
    assert "gpu-check plan on no GPU (a rehearsal: smoke sizes)" in done.stdout
    assert "GPU check: no GPU" in done.stdout


def test_a_rehearsal_cannot_be_committed_as_evidence(rehearsal, tmp_path):
    out, _ = rehearsal
    with pytest.raises(ValueError, match="CPU rehearsal"):
        gpu_evidence.unpack(out / gpu_check.ARCHIVE, tmp_path)


def test_bad_options_are_refused_by_name():
    for args, said in ((["--budget", "5"], "--budget=5 must be 60..3600 seconds"),
                       (["--steps", "ladder,bench"], "--steps=ladder,bench: allowed"),
                       (["--notebooks", "99"], "--notebooks 99: no such PyTorch notebook")):
        done = gpu_check_command(*args)
        assert done.returncode == 2 and said in done.stderr, done.stderr


def test_the_ladder_the_check_walks_is_one_the_command_line_accepts(tmp_path):
    from gpu_course.cli import build_parser
    for rehearse in (True, False):
        command, _ = gpu_check.ladder_command(tmp_path, rehearse, 60)
        assert command[1:3] == ["-m", "gpu_course.cli"]
        args = build_parser().parse_args(command[3:])
        assert args.verb == "ladder" and args.quick


def test_a_notebook_past_its_time_is_stopped_in_its_cell_and_keeps_what_it_ran(tmp_path):
    """A real kernel: the second cell sleeps past the deadline and is stopped there; the
    executed copy keeps the first cell's output."""
    import time
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('first')"),
                                         nbformat.v4.new_code_cell("import time; time.sleep(60)"),
                                         nbformat.v4.new_code_cell("print('never')")])
    path = tmp_path / "07_slow.ipynb"
    nbformat.write(nb, path)
    result = gpu_check.run_notebook(path, tmp_path / "kept", time.monotonic() + 12)
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


# -- tools/gpu_session.sh: a stand-in interpreter records what it was asked, so the shell's
# plumbing is what runs (the check's own rehearsal is above; tools.reference's parts are
# tested in tests/test_reference.py)
@pytest.fixture
def session(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/bash\n"
                    "[ \"$1\" = -c ] && exit 0\n"
                    "echo \"$@\" > \"$ASKED\"\n"
                    "[ -f tools/reference.py ] || { echo 'No module named tools' >&2; exit 1; }\n"
                    "while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; shift; done\n"
                    "[ -n \"$NORUN\" ] || { mkdir -p \"$out/ladder-pytorch-1/r1\" && echo '{}' > \"$out/ladder-pytorch-1/r1/run.json\"; }\n"
                    "echo table > \"$out/ladder.txt\"\n"
                    "exit ${EXIT:-0}\n")
    fake.chmod(0o755)

    def run(*args, out="out", cwd=gpu_check.REPO, **env):
        done = subprocess.run(["bash", str(gpu_check.REPO / "tools" / "gpu_session.sh"), *args], cwd=cwd,
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "OUT": str(tmp_path / out), "GPU_PYTHON": str(fake),
                                   "ASKED": str(tmp_path / "asked.txt"), **env})
        asked = (tmp_path / "asked.txt").read_text() if (tmp_path / "asked.txt").exists() else ""
        return done, asked, tmp_path / out
    return run


def test_the_session_script_runs_the_check_within_the_budget_it_is_given(session):
    done, asked, out = session("--budget", "300", "--notebooks", "08,09")
    assert done.returncode == 0, done.stdout + done.stderr
    assert asked.split() == ["-m", "tools.gpu_check", "--budget", "300", "--notebooks", "08,09",
                             "--out", str(out)]
    assert (out / "nvidia-smi.csv").is_file() and "gpu-session: check exit 0" in done.stdout
    done, asked, _ = session("check", "--rehearse", "--steps", "smoke", out="again", EXIT="1")
    assert done.returncode == 1 and "gpu-session: check exit 1" in done.stdout
    assert "--budget 480 --steps smoke --rehearse" in asked


def test_the_session_script_in_ladder_mode_packs_what_the_reference_recorded(session):
    """`ladder --repeats 3 --model wrn16_10` reaches tools.reference, and the records are
    packed into one archive with ladder.txt beside, also when the budget cut the walk."""
    done, asked, out = session("ladder", "--repeats", "3", "--model", "wrn16_10")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gpu-session: done; 1 runs recorded" in done.stdout
    assert asked.split()[:4] == ["-m", "tools.reference", "--parts", "machine,ladder"]
    assert "--repeats 3 --model wrn16_10" in asked and "--quick" not in asked
    assert sorted(p.name for p in out.iterdir()) == [
        "ladder-log.txt", "ladder.txt", "nvidia-smi.csv", "reference.tar.gz"]
    with tarfile.open(out / "reference.tar.gz") as tar:
        assert "reference/ladder-pytorch-1/r1/run.json" in tar.getnames()
    # the traces first (lesson 12's before and after), the ladder's network as it is
    done, asked, _ = session("ladder", "--repeats", "2", "--parts", "machine,profiles,ladder",
                             "--rehearse", out="again")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--parts machine,profiles,ladder --repeats 2 --quick --out" in asked
    assert "--model" not in asked


def test_the_session_script_runs_from_outside_the_checkout(session, tmp_path):
    """Started from another folder, it still finds tools/ (it failed every step with 'No
    module named tools'), and a relative OUT is where it was started."""
    done, asked, _ = session("ladder", out="rel", cwd=tmp_path, OUT="rel")
    assert done.returncode == 0 and "1 runs recorded" in done.stdout, done.stdout + done.stderr
    assert asked.split()[:2] == ["-m", "tools.reference"]
    assert (tmp_path / "rel" / "reference.tar.gz").is_file()


@pytest.mark.parametrize("code", ["0", "2"])
def test_a_ladder_that_recorded_no_run_fails_the_command(session, code):
    done, _, out = session("ladder", "--model", "resnet21", NORUN="1", EXIT=code)
    assert done.returncode == 1 and "the ladder recorded no run" in done.stderr, done.stderr
    assert "gpu-session: done" not in done.stdout


def test_a_ladder_that_failed_after_recording_fails_with_its_code(session):
    done, _, _ = session("ladder", EXIT="3")
    assert done.returncode == 3 and "1 runs recorded" in done.stdout
    done, _, _ = session("ladder", EXIT="124", out="cut")   # the budget stopped the walk
    assert done.returncode == 0


@pytest.mark.parametrize("args, said", [
    (["--budget", "ten"], "--budget ten: a whole number of seconds above 0"),
    (["ladder", "--repeats", "0"], "--repeats 0: a whole number above 0"),
    (["--levers", "autotune"], "--levers is not an option"),
    (["ladder", "--notebooks", "08"], "--notebooks and --steps are the check's"),
    (["--budget"], "--budget needs a value")])
def test_the_session_script_refuses_what_it_does_not_know_and_runs_nothing(session, args, said):
    done, asked, out = session(*args)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert asked == "" and not out.exists()


def test_the_session_script_stops_when_jupyter_cannot_be_installed(session, tmp_path):
    """A Python without Jupyter's kernel and client, and no wheels to install from."""
    bare = tmp_path / "bare"
    bare.write_text("#!/bin/bash\n[ \"$1\" = -c ] && exit 1\n"
                    "[ \"$1 $2\" = \"-m pip\" ] && exit 1\necho \"$@\" > \"$ASKED\"\n")
    bare.chmod(0o755)
    done, asked, _ = session(GPU_PYTHON=str(bare))
    assert done.returncode == 1 and "the wheels in .whl/ did not install" in done.stdout
    assert asked == ""


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
