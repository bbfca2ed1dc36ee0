"""The short form of `python -m tools.step_launches` (tiny model, two rungs)."""
from tools import step_launches


def test_the_tuned_rung_dispatches_few_operators_and_reads_nothing_back(monkeypatch, capsys):
    monkeypatch.setenv("GPU_COURSE_COMPILE_BACKEND", "aot_eager")
    rows = step_launches.run(quick=True, steps=1, warmup=2, only=["naive", "data-on-gpu"])
    by_rung = {r["rung"]: r for r in rows}
    assert set(by_rung) == {"naive", "data-on-gpu"}
    tuned = by_rung["data-on-gpu"]   # the tuned rung: the whole step, one graph
    assert all(r["syncs"] == 0 for r in rows)  # no host read inside a step
    # loose: the tiny net's forward and backward (~50 in bfloat16) + LARS (~17) + batch
    # cut, schedule and sums (~15); before LARS used foreach ops it alone dispatched ~9 per tensor
    assert tuned["ops"] <= 120, tuned
    assert tuned["host_ms"] > 0 and tuned["step_ms"] >= tuned["host_ms"] * 0.5
    print(step_launches.table(rows))
    assert "data-on-gpu" in capsys.readouterr().out
