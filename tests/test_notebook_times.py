"""The smoke-time table is computed and written by a script, not typed."""
from tools import notebook_times as nt


def result(track, rows):
    return {"track": track, "rows": rows, "load_before": 1.5, "cpus": 2, "cpu": "x86_64",
            "when": "2026-11-23 02:00 UTC"}


def test_table_states_each_notebook_the_total_and_the_load(tmp_path):
    block = nt.markdown(result("pytorch", [("pytorch/01_naive.ipynb", 47.2, "ok", 3.1),
                                           ("pytorch/04_mixed_precision.ipynb", 125.0, "ok", 4.0)]))
    assert "| pytorch/01_naive.ipynb | 47 s | 3.1 | ok |" in block
    assert "| pytorch/04_mixed_precision.ipynb | 2.1 min | 4.0 | ok |" in block
    assert "| all | 2.9 min |" in block and "load average 1.5" in block


def test_write_replaces_only_its_own_track(tmp_path):
    path = tmp_path / "SMOKE_TIMES.md"
    nt.write(path, nt.markdown(result("gluon", [("gluon/01_naive.ipynb", 40, "ok", 1)])), "gluon")
    nt.write(path, nt.markdown(result("pytorch", [("pytorch/01_naive.ipynb", 50, "ok", 1)])), "pytorch")
    nt.write(path, nt.markdown(result("gluon", [("gluon/01_naive.ipynb", 30, "ok", 1)])), "gluon")
    text = path.read_text()
    assert text.count("smoke-times:gluon -->") == 2 and "| 30 s |" in text and "| 40 s |" not in text
    assert "| 50 s |" in text


def test_every_lesson_of_a_track_is_measured():
    names = [p.name for p in nt.notebooks_of("gluon")]
    assert names[0] == "01_naive.ipynb" and names[-1] == "run_on_sagemaker.ipynb" and len(names) >= 9
    assert all(p.parent.name == "pytorch" for p in nt.notebooks_of("pytorch"))


def test_a_stopped_run_is_written_from_its_log():
    log = ("  01_naive.ipynb: slowest cells #5 124 s\n"
           "pytorch/01_naive.ipynb                      183 s  load 10.0  ok\n"
           "pytorch/02_dataloader_workers.ipynb         523 s  load 8.9  ok\n")
    block = nt.markdown(nt.from_log(log, "pytorch"))
    assert "| pytorch/01_naive.ipynb | 3.0 min | 10.0 | ok |" in block
    assert "| pytorch/03_compile.ipynb | – | – | not measured (the run was stopped) |" in block
    assert "| the measured ones | 11.8 min |" in block
