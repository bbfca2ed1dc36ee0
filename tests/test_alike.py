"""Comparability: whatever compares two runs first checks that they differ only in what
the comparison names (fake runs, one per difference)."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fake_runs  # noqa: E402

from gpu_course.analyse import alike, noise  # noqa: E402
from gpu_course.show import report  # noqa: E402
from gpu_course.show.closing import Closing  # noqa: E402


@pytest.fixture
def run(tmp_path):
    """run(name, config={...}, meta={...}, rate=...) -> a real run folder read back."""
    count = [0]

    def make(name, config=None, meta=None, rate=600.0, epochs=3, **options):
        count[0] += 1
        path = fake_runs.write_run(tmp_path, name, config=config, index=count[0],
                                   samples_per_sec=rate, epochs=epochs, seed=count[0],
                                   **options)
        record = json.loads((path / "run.json").read_text())
        for key, value in (meta or {}).items():
            record[key] = value
        (path / "run.json").write_text(json.dumps(record))
        return fake_runs.load(path)

    return make


def quiet(busy):
    """A record's load section: the machine kept `busy` cores busy over 100 s, the run's
    own process one of them."""
    return {"load": {"start": {"wall": 0.0, "process_cpu_s": 0.0, "cpu_busy_s": 0.0,
                               "cpu_count": 2},
                     "end": {"wall": 100.0, "process_cpu_s": 100.0,
                             "cpu_busy_s": 100.0 * busy}}}


@pytest.mark.parametrize("key, x, y", [
    ("model", "resnet20", "tiny"),
    ("dataset", "synthetic", "cifar10"),
    ("train_size", 1024, 320),
    ("epochs", 3, 30),
    ("batch_size", 64, 1024),
    ("dtype", "float32", "bfloat16"),
    ("graph", "eager", "compiled"),
])
def test_runs_that_differ_in_a_setting_are_told_apart_unless_the_comparison_names_it(
        run, key, x, y):
    a, b = run("a", config={key: x}), run("b", config={key: y})
    assert alike.differences(a, b) == {key: (x, y)}
    assert alike.differences(a, b, varies=(key,)) == {}
    assert alike.differing([a, b]) == [key]
    v = noise.compare(a, b)
    assert v.kind == noise.Kind.UNLIKE and not v.is_effect
    assert f"{key} " in str(v) and "no verdict" in str(v)
    assert noise.compare(a, b, varies=(key,)).kind != noise.Kind.UNLIKE


def test_a_setting_an_older_record_kept_and_a_newer_one_lacks_is_no_difference(run):
    """Fields since retired (momentum, kvstore...) are in older records only: compared
    where both runs have them, not between an old run and a new one."""
    old = run("old", config={"momentum": 0.9, "kvstore": "device"})
    new = run("new")
    assert alike.differences(old, new) == {} and alike.differing([old, new]) == []
    older = run("older", config={"momentum": 0.5})
    assert alike.differences(old, older) == {"momentum": (0.9, 0.5)}


def test_what_ran_counts_not_what_was_asked(run):
    # float16 asked for on a CPU ran float32: alike with a float32 run in dtype
    asked = run("float16", config={"dtype": "float16"}, meta={"downgrades": [
        {"field": "dtype", "requested": "float16", "ran": "float32", "why": "no GPU"}]})
    plain = run("float32")
    assert alike.value(asked, "dtype") == "float32"
    assert "dtype" not in alike.differences(plain, asked)


@pytest.mark.parametrize("aspect, a_meta, b_meta, x, y", [
    (alike.Aspect.THREADS, {"ran": {"threads": {"intra_op": 2}}},
     {"ran": {"threads": {"intra_op": 1}}}, 2, 1),
    (alike.Aspect.COMPILE_BACKEND, {"ran": {"compile_backend": "inductor"}},
     {"ran": {"compile_backend": "aot_eager"}}, "inductor", "aot_eager"),
    (alike.Aspect.LOAD, quiet(1.0), quiet(2.0), "not shared", "shared"),
])
def test_what_the_runs_ran_with_is_compared_as_recorded(run, aspect, a_meta, b_meta, x, y):
    a, b = run("a", meta=a_meta), run("b", meta=b_meta)
    assert alike.differences(a, b) == {aspect.value: (x, y)}
    assert alike.differences(a, b, varies=[aspect]) == {}
    assert noise.compare(a, b).kind == noise.Kind.UNLIKE


def test_another_machine_is_a_difference(run):
    a = run("a", meta={"hardware": {"hostname": "laptop", "gpus": []}})
    b = run("b", meta={"hardware": {"hostname": "h200-box", "gpus": [{"name": "NVIDIA H200"}]}})
    assert alike.differences(a, b) == {"machine": ("laptop", "h200-box (NVIDIA H200)")}


def test_what_one_record_lacks_is_no_difference(run):
    # an eager run records no compile backend; an older record no threads or load
    a = run("a", meta={"ran": {"compile_backend": "inductor", "threads": {"intra_op": 2}}})
    assert alike.differences(a, run("b")) == {}


def test_names_and_seeds_never_differ_and_a_repeat_is_alike(run):
    a, b = run("a", config={"seed": 1}), run("b", config={"seed": 2})
    assert alike.differences(a, b) == {}
    assert alike.differences([a, b], run("c")) == {}  # a group stands by its median run


def test_the_sentence_names_each_difference_with_both_values(run):
    a = run("naive", config={"model": "resnet20", "train_size": 1024})
    b = run("bfloat16", config={"model": "tiny", "train_size": 320})
    text = str(noise.compare(a, b))
    assert "model resnet20 against tiny" in text and "train_size 1,024 against 320" in text


def test_a_comparison_must_name_settings_clearly(run):
    a = run("a")
    with pytest.raises(ValueError, match="varies="):
        alike.differences(a, a, varies=[3])


def test_a_closing_refuses_a_verdict_across_an_unnamed_difference(run):
    a = run("1 worker", config={"num_workers": 1}, rate=500.0)
    b = run("2 workers", config={"num_workers": 2, "model": "tiny"}, rate=900.0)
    say = Closing(report.ladder_table([a, b]), [a, b], varies=("num_workers",))
    v = say.compare(a, b)
    assert v.kind == noise.Kind.UNLIKE and "model resnet20 against tiny" in v.unlike
    say(f"Two workers: {v}.")           # the refusal is cited like any verdict
    assert say.check() == []


def test_the_ladder_table_has_a_column_for_whatever_differs_and_none_for_the_rest(run):
    a = run("naive", config={"model": "resnet20"})
    b = run("tiny", config={"model": "tiny"})
    frame = report.ladder_table([a, b])
    assert list(frame["model"]) == ["resnet20", "tiny"]
    assert "dataset" not in frame.columns and "batch_size" not in frame.columns


def test_a_ceiling_gets_no_speed_up_over_the_run_it_bounds(run):
    a = run("naive", rate=100.0)
    ceiling = run("input ceiling", config={"mock": "trainer"}, rate=50_000.0)
    frame = report.ladder_table([a, ceiling])
    assert frame["speedup"].iloc[0] == 1.0 and frame["speedup"].isna().iloc[1]


def test_interleaved_repeats_measure_the_load_in_their_spread(run):
    quiet_a, busy_a = run("a", meta=quiet(1.0)), run("a", meta=quiet(2.0))
    b = run("b", meta=quiet(1.0))
    assert alike.differences(busy_a, b) == {"machine load": ("shared", "not shared")}
    assert alike.differences([quiet_a, busy_a], [b, b]) == {}


def test_a_repeat_of_the_baseline_gets_no_speed_up(run):
    a, again = run("naive", rate=100.0), run("naive again", rate=114.0)
    frame = report.ladder_table([a, again, run("tiny", config={"model": "tiny"}, rate=300.0)])
    assert frame["speedup"].isna().iloc[1] and frame["speedup"].iloc[2] == pytest.approx(3.0, rel=0.05)


@pytest.mark.parametrize("engine, words", [("pytorch", ("eager", "compile", "cuda-graphs")),
                                           ("gluon", ("imperative", "hybridize", "static-alloc"))])
def test_a_graph_is_shown_in_the_words_of_the_run_s_track(run, engine, words):
    """Records keep the canonical graph; what a sentence or a table column prints is the
    run's own track's word, while comparing stays on the record's."""
    runs = [run(g, config={"graph": g}, engine=engine) for g in ("eager", "hybrid", "static")]
    assert alike.differences(runs[0], runs[1]) == {"graph": words[:2]}
    assert alike.words(alike.differences(*runs[::2]), "a", "b") == \
        f"graph {words[0]} against {words[2]}"
    assert tuple(report.ladder_table(runs)["graph"]) == words
    assert [alike.value(r, "graph") for r in runs] == ["eager", "hybrid", "static"]
