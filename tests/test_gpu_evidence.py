"""The GPU check's evidence: which GPU branches a check verified and by what, its archive
committed under the reference, README's table and a lesson's pointer to its executed copy.
(The check itself, rehearsed on this CPU: tests/pytorch/test_gpu_check.py.)"""
import base64
import io
import json
import re
import tarfile

import nbformat
import pytest

from fake_runs import write_run
from gpu_course import lessons
from gpu_course.measure.records import load_runs
from gpu_course.show import report
from tools import gpu_check, gpu_evidence


def gpu_run(folder, name, index, config=None, ran=None, notes=None):
    path = write_run(folder, name, config=config, index=index)
    meta = json.loads((path / "run.json").read_text())
    meta["ran"] = {"torch_device": "cuda:0", **(ran or {})}
    meta["notes"] = notes or {}
    (path / "run.json").write_text(json.dumps(meta))
    return path


def junit(path, outcomes: dict):
    cases = "".join(f'<testcase name="{name}">' + {"passed": "", "failed": "<failure/>",
                                                     "skipped": "<skipped/>"}[how] + "</testcase>"
                    for name, how in outcomes.items())
    path.write_text(f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>')


def test_a_branch_is_verified_only_by_a_gpu_run_a_passed_test_or_a_notebook_on_the_gpu(tmp_path):
    runs = tmp_path / "runs"
    gpu_run(runs, "float16", 0, config={"dtype": "float16", "pin_memory": True},
            ran={"compile_backend": "inductor", "tf32": {"convolutions": True}})
    gpu_run(runs, "cuda-graphs", 1, config={"dtype": "bfloat16", "channels_last": True},
            ran={"train_data": {"class": "GpuLoader"}}, notes={"cuda_graph": True})
    write_run(runs, "on-the-cpu", config={"dtype": "float16"}, index=2)   # no `ran`: no GPU
    gpu_run(runs, "compile", 3, notes={"compiled": {"graphs": 2, "mode": "reduce-overhead"}})
    junit(tmp_path / "gpu_tests.xml", {"test_ddp_with_nccl_at_world_size_one": "passed",
                                       "test_an_oom_after_finished_epochs_keeps_them": "failed",
                                       "test_cudnn_benchmark_is_on_and_recorded": "skipped"})
    notebooks = [{"name": "12_profilers.ipynb", "status": "ok"},
                 {"name": "15_inference.ipynb", "status": "ok", "size": "smoke"},
                 {"name": "11_environment.ipynb", "status": "error in cell 3: x"}]
    found = {b["branch"]: b for b in gpu_evidence.branches(tmp_path, notebooks)}
    by = {name: b["by"] for name, b in found.items() if b["verified"]}
    assert by["float16 with a GradScaler"] == "runs float16"
    assert by["bfloat16 with channels_last"] == "runs cuda-graphs"
    assert by["TF32 convolutions (float32 on tensor cores)"] == "runs float16"
    assert by["torch.compile with inductor"] == "runs float16"
    assert by["CUDA graphs (the whole step, or mode='reduce-overhead')"] == \
        "runs compile, cuda-graphs"
    assert by["the GPU-resident loader"] == "runs cuda-graphs"
    assert by["pinned host memory and non-blocking copies"] == "runs float16"
    assert by["DDP with NCCL at world size 1"] == "test test_ddp_with_nccl_at_world_size_one"
    assert by["the CUDA profiler trace"] == "notebook 12_profilers.ipynb"
    assert by[next(b for b in by if b.startswith("inference timed"))] == \
        "notebook 15_inference.ipynb at smoke size"
    assert not found["a clear out-of-memory error, finished epochs kept"]["verified"]  # failed
    assert not found["cudnn.benchmark"]["verified"]                                   # skipped
    assert not found["pageable against pinned copies"]["verified"]                    # errored
    several = [b for b in found.values() if b["by"] == "needs two or more GPUs"]
    assert several and not any(b["verified"] for b in several)


def test_on_a_cpu_nothing_is_verified_not_even_by_a_notebook_that_ran(tmp_path):
    write_run(tmp_path / "runs", "naive", config={"dtype": "float16"})
    found = gpu_evidence.branches(tmp_path, [{"name": "12_profilers.ipynb", "status": "ok"}])
    assert not any(b["verified"] for b in found)


def test_images_over_the_caps_are_left_out_and_say_so():
    small, big = b"p" * 1000, b"p" * (gpu_check.IMAGE_CAP + 1)
    outputs = [nbformat.v4.new_output("display_data", data={
        "image/png": base64.b64encode(raw).decode()}) for raw in (small, big, small)]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=outputs)])
    assert gpu_check.cap_images(nb) == 2000
    kinds = [sorted(o["data"]) for o in nb.cells[0].outputs]
    assert kinds == [["image/png"], ["text/plain"], ["image/png"]]
    assert "left out by the GPU check" in nb.cells[0].outputs[1]["data"]["text/plain"]


def test_each_step_ends_by_its_share_and_an_early_end_leaves_time_to_the_next():
    clock = gpu_check.Clock(480)
    order = list(gpu_check.STEPS)
    assert clock.allowance("smoke", order) == pytest.approx(gpu_check.SHARES["smoke"] * 480, abs=1)
    clock.start -= 100   # the smoke pass ended after 100 s: the check's pass gets what it left
    assert clock.allowance("check", order) == pytest.approx(
        (gpu_check.SHARES["smoke"] + gpu_check.SHARES["check"]) * 480 - 100, abs=1)
    # steps run alone share what all would get: the smoke pass alone gets the whole of it
    clock.start += 100
    assert clock.allowance("smoke", ["smoke"]) == pytest.approx(
        sum(gpu_check.SHARES.values()) * 480, abs=1)
    assert clock.allowance("tests", ["smoke", "tests"]) == pytest.approx(
        sum(gpu_check.SHARES.values()) * 480, abs=1)
    assert sum(gpu_check.SHARES.values()) < 1   # the summary and the archive keep the rest


@pytest.mark.parametrize("device, slug", [("NVIDIA H100 80GB HBM3", "h100"),
                                          ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-40GB", "a100"),
                                          ("Tesla V100-SXM2-16GB", "v100")])
def test_the_reference_folder_is_named_for_the_gpu(device, slug):
    assert gpu_evidence.slug(device) == slug


def archive(tmp_path, device="NVIDIA H100 80GB HBM3", rehearsal=False, at="2026-11-27T10:15:00+0000",
            notebooks=(("01_naive.ipynb", "ok"), ("03_compile.ipynb", "ok"))):
    out = tmp_path / f"out-{at[8:10]}{at[11:13]}"
    (out / "notebooks").mkdir(parents=True)
    (out / "notebooks-smoke").mkdir()
    nbformat.write(nbformat.v4.new_notebook(), out / "notebooks-smoke" / "01_naive.ipynb")
    for name, status in notebooks:
        if not status.startswith("skipped"):
            nb = nbformat.v4.new_notebook()
            nb.metadata["check"] = at
            nbformat.write(nb, out / "notebooks" / name)
    gpu_run(out / "runs", "float16", 0, config={"dtype": "float16"})
    summary = {"device": device, "rehearsal": rehearsal, "at": at,
               "notebooks": [{"name": n, "status": s} for n, s in notebooks]}
    (out / gpu_check.SUMMARY).write_text(json.dumps(summary))
    (out / "summary.md").write_text("# GPU check\n")
    return gpu_check.pack(out)


def check_of(path):
    return nbformat.read(path, as_version=4).metadata["check"]


def test_unpacking_keeps_each_check_apart_from_the_reference_and_the_notebooks_that_stand(
        tmp_path, monkeypatch, capsys):
    root = tmp_path / "reference" / "gpu-checks"
    first = gpu_evidence.unpack(archive(tmp_path), root)
    target = root / "pytorch-h100"
    assert first == target / "202611271015"
    assert (first / gpu_check.SUMMARY).is_file() and (first / "summary.md").is_file()
    assert [r.name for r in load_runs(first / "runs")] == ["float16"]
    assert not (first / "notebooks").exists() and not (first / "notebooks-smoke").exists()
    assert sorted(p.name for p in (target / "notebooks").iterdir()) == [
        "01_naive.ipynb", "03_compile.ipynb"]
    with pytest.raises(ValueError, match="already committed"):
        gpu_evidence.unpack(archive(tmp_path / "again"), root)
    # a later check: 01 failed now (it replaces), 03 stopped for time (the ok copy stands),
    # 08 ran for the first time, 09 was stopped on its first run, 14 was skipped (nothing)
    later = "2026-11-28T09:00:00+0000"
    gpu_evidence.unpack(archive(tmp_path, at=later, notebooks=(
        ("01_naive.ipynb", "error in code cell 2 of 9: \x1b[31mSystemError\x1b[39m: x"),
        ("03_compile.ipynb", "stopped in code cell 4 of 8: the notebooks' time was up"),
        ("08_summary.ipynb", "ok"),
        ("09_input_pipeline.ipynb", "stopped in code cell 1 of 5: the notebooks' time was up"),
        ("14_memory.ipynb", "skipped: the notebooks' time was up"))),
        root)
    assert sorted(p.name for p in (target / "notebooks").iterdir()) == [
        "01_naive.ipynb", "03_compile.ipynb", "08_summary.ipynb", "09_input_pipeline.ipynb"]
    assert check_of(target / "notebooks" / "01_naive.ipynb") == later
    assert check_of(target / "notebooks" / "03_compile.ipynb") == "2026-11-27T10:15:00+0000"
    block = gpu_evidence.readme_block(root)
    assert "| lesson | NVIDIA H100 80GB HBM3 (2 checks) |" in block
    assert "| pytorch/03_compile.ipynb | [ok, 2026-11-27](" in block
    assert "| pytorch/01_naive.ipynb | [error in code cell 2 of 9: SystemError: x, 2026-11-28](" in block
    assert "| pytorch/14_memory.ipynb | not run yet |" in block
    readme = tmp_path / "README.md"
    readme.write_text("before\n" + "\n".join(gpu_evidence.MARKERS) + "\nafter\n")
    gpu_evidence.write_readme(readme, root)
    assert block in readme.read_text() and readme.read_text().endswith("after\n")
    # the lesson's closing names its executed copy, once a session, where it ran without error
    monkeypatch.setattr(report, "REFERENCE_ROOT", tmp_path / "reference")
    monkeypatch.setattr(report, "GPU_CHECKS", root)
    monkeypatch.setattr(lessons, "_POINTED", set())
    runs = [load_runs(first / "runs")[0]]
    lessons._point_to_executed_copy("03", runs)
    lessons._point_to_executed_copy("03", runs)
    lessons._point_to_executed_copy("01", runs)
    out = capsys.readouterr().out
    assert out.count("This lesson as it ran on one NVIDIA H100 80GB HBM3") == 1
    assert "gpu_course/reference/gpu-checks/pytorch-h100/notebooks/03_compile.ipynb" in out
    # the next check on this GPU runs at its size first what no check executed there, then
    # what ended in an error, then what was stopped for time, then the oldest copy
    monkeypatch.setattr(gpu_check, "NOTEBOOKS", tmp_path / "nbs")
    (tmp_path / "nbs").mkdir()
    for name in ("01_naive", "03_compile", "08_summary", "09_input_pipeline", "14_memory",
                 "15_inference"):
        (tmp_path / "nbs" / f"{name}.ipynb").write_text("{}")
    order = gpu_check.by_need(gpu_check.notebooks(), "NVIDIA H100 80GB HBM3")
    assert [(p.name[:2], why) for p, why in order] == [
        ("14", "never executed on this GPU"), ("15", "never executed on this GPU"),
        ("01", "its copy of 2026-11-28 ended in an error"),
        ("09", "its copy of 2026-11-28 stopped for time"),
        ("03", "its copy of 2026-11-27 ran without error"),
        ("08", "its copy of 2026-11-28 ran without error")]
    assert [p.name[:2] for p, _ in gpu_check.by_need(gpu_check.notebooks(["15", "01"]), None)] \
        == ["01", "15"]   # a rehearsal: lesson order


def test_a_rehearsal_is_not_evidence(tmp_path):
    with pytest.raises(ValueError, match="is a CPU rehearsal .no GPU.: only a check on a GPU"):
        gpu_evidence.unpack(archive(tmp_path, device="no GPU", rehearsal=True), tmp_path / "ref")


@pytest.mark.parametrize("summary, says", [
    ({"at": ""}, "at ''"), ({"at": "soon"}, "at 'soon'"), ({"device": ""}, "device ''"),
    ({"at": None}, "at None"), ({"notebooks": None}, "a list of notebooks")])
def test_an_undated_or_deviceless_check_is_refused_not_filed_outside_a_dated_folder(
        tmp_path, summary, says):
    path = archive(tmp_path)
    with tarfile.open(path) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers() if m.isreg()]
    with tarfile.open(path, "w:gz") as tar:
        for member, data in members:
            if member.name.endswith(gpu_check.SUMMARY):
                data = json.dumps({**json.loads(data), **summary}).encode()
                member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    root = tmp_path / "ref"
    with pytest.raises(ValueError, match=re.escape(says)):
        gpu_evidence.unpack(path, root)
    assert not root.exists()


@pytest.mark.parametrize("content", [b"not a tar", None])
def test_an_archive_that_is_no_check_is_one_line_naming_it(tmp_path, content, capsys, monkeypatch):
    path = tmp_path / "gpu-check.tar.gz"
    if content:
        path.write_bytes(content)
    monkeypatch.setattr(gpu_evidence, "write_readme", lambda: pytest.fail("README rewritten"))
    assert gpu_evidence.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"gpu_evidence: {path} is not a GPU check's archive") and err.count("\n") == 1


def test_a_damaged_check_summary_is_named_and_skipped_not_hiding_the_others(tmp_path):
    root = tmp_path / "ref"
    gpu_evidence.unpack(archive(tmp_path), root)
    bad = root / "pytorch-a100" / "202601010000" / gpu_check.SUMMARY
    bad.parent.mkdir(parents=True)
    bad.write_text('{"device": "A100", "at": "2026-01-01')
    with pytest.warns(UserWarning, match=f"skipping {re.escape(str(bad))}: unreadable"):
        checks = report.gpu_checks(root)
    assert [c["folder"] for c in checks] == ["pytorch-h100"]


def test_the_readme_table_is_the_committed_evidence():
    text = gpu_evidence.README.read_text()
    start, end = (text.index(m) for m in gpu_evidence.MARKERS)
    assert text[start + len(gpu_evidence.MARKERS[0]):end].strip() == gpu_evidence.readme_block()


def test_the_archive_leaves_out_files_over_the_cap_and_names_them(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_check, "FILE_CAP", 100)
    (tmp_path / "small.txt").write_text("x")
    (tmp_path / "trace.json").write_text("x" * 200)
    with tarfile.open(gpu_check.pack(tmp_path)) as tar:
        names = tar.getnames()
    assert "small.txt" in names and "trace.json" not in names
    assert "trace.json (0.0 MB)" in (tmp_path / "left_out.txt").read_text()
