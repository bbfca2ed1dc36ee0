"""The committed reference results: real records that load, and README text that is the
summary computed from them (never typed)."""
import re
from pathlib import Path

import pytest

from gpu_course.analyse import metrics
from gpu_course.show import report
from tools import reference
from gpu_course.measure.records import load_runs

REPO = Path(__file__).resolve().parents[1]
H200 = REPO / "gpu_course" / "reference" / "pytorch-h200"


def _between(text: str, start: str, end: str) -> str:
    found = re.search(re.escape(start) + r"\n(.*?)" + re.escape(end), text, re.S)
    assert found, f"no {start} ... {end} block"
    return found.group(1)


def test_the_h200_ladders_are_whole_and_say_where_they_ran():
    ladders = sorted(H200.glob("ladder-pytorch-*"))
    assert len(ladders) >= 1
    for ladder in ladders:
        runs = load_runs(ladder)
        assert [r.name for r in runs] == ["naive", "workers", "compile", "bfloat16",
                                          "large-batch", "lr-schedule", "data-on-gpu",
                                          "cuda-graphs"]
        for run in runs:
            assert run.status == "finished"
            assert run.meta["hardware"]["gpus"][0]["name"] == "NVIDIA H200"
            assert run.config["train_size"] == 50_000 and len(run.steps) > 0
            assert run.meta["notes"]["code_commit"]  # the code that ran (see README)


def test_the_readmes_quote_the_summary_computed_from_the_records():
    own = (REPO / "gpu_course" / "reference" / "README.md").read_text()
    assert _between(own, "<!-- summary -->", "<!-- end summary -->") == \
        reference.summary(H200)
    top = (REPO / "README.md").read_text()
    assert _between(top, "<!-- reference summary -->", "<!-- end reference summary -->") == \
        reference.summary(H200, short=True)


def test_the_notebooks_find_real_reference_rows():
    found = {r.name: r for r in load_runs(H200)}   # the newest of a name wins
    rows = [found[name] for name in ("workers", "compile", "lr-schedule")]
    assert report.ladder_table(rows)["sm_active"].notna().all()  # GPM from the real card
    tuned = found["cuda-graphs"]
    assert metrics.samples_per_sec(tuned) > 100_000


@pytest.mark.parametrize("part", ["machine", "nope"])
def test_reference_parts_are_checked(part, tmp_path, capsys):
    if part == "nope":
        with pytest.raises(SystemExit, match="unknown"):
            reference.main(["--out", str(tmp_path), "--parts", part])
        return
    assert reference.main(["--out", str(tmp_path), "--parts", part]) == 0
    assert (tmp_path / "machine.json").exists()


def test_the_ladder_part_walks_the_repeats_and_network_asked_for(tmp_path, monkeypatch):
    """`--parts ladder --repeats 3 --model wrn16_10` (the issue's >= 3 seeds, and the
    GPU-bound regime) reach the ladder, and ladder.txt gives its table, conclusion and
    anatomy, computed from the runs (fakes here: a real walk needs a GPU to mean much)."""
    import fake_runs
    from gpu_course import ladder as course_ladder
    asked = {}

    def fake_walk(engine, **kwargs):
        asked.update(kwargs, engine=engine)
        paths = fake_runs.gpu_ladder(tmp_path / "fake")[:3]
        return [[fake_runs.load(p)] * 2 for p in paths], {}
    monkeypatch.setattr(course_ladder, "run_ladder", fake_walk)
    out = tmp_path / "ref"
    assert reference.main(["--out", str(out), "--parts", "ladder", "--repeats", "3",
                           "--model", "wrn16_10"]) == 0
    assert asked["engine"] == "pytorch" and asked["walk"].repeats == 3
    assert asked["model"] == "wrn16_10" and asked["quick"] is False
    text = (out / "ladder.txt").read_text()
    assert "8 workers" in text and "data-bound" in text   # the table, and the anatomy's verdict
    with pytest.raises(SystemExit):
        reference.main(["--out", str(out), "--parts", "ladder", "--repeats", "0"])


@pytest.mark.parametrize("machine", [None, "{cut", '{"nvidia_smi": []}'])
def test_a_summary_of_a_folder_that_is_no_reference_is_one_line_naming_it(tmp_path, capsys, machine):
    if machine is not None:
        (tmp_path / "machine.json").write_text(machine)
    assert reference.main(["--summary", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"reference: {tmp_path}") and err.count("\n") == 1
    assert "--summary needs a folder that `python -m tools.reference --out` wrote" in err
