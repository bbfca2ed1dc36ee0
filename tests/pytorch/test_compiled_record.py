"""A compiled run's record says what torch.compile made of its network: graphs, graph
breaks and recompiles; the anatomy table shows it beside the step's split."""
import pytest

from gpu_course import torch as gc
from gpu_course.analyse import anatomy


def test_a_compiled_run_records_its_graphs_and_breaks(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_COURSE_COMPILE_BACKEND", "aot_eager")
    cfg = gc.Experiment(name="compiled", engine="pytorch", model="tiny", graph="hybrid",
                        train_size=128, test_size=64, batch_size=32, epochs=1, warmup_steps=1,
                        num_workers=0, monitor_interval=0.2)
    compiled = gc.train(cfg, runs_dir=tmp_path, progress=False)
    eager = gc.train(cfg.replace(name="eager", graph="eager"), runs_dir=tmp_path, progress=False)
    made = compiled.meta["notes"]["compiled"]
    assert made["graphs"] >= 1 and made["graph_breaks"] >= 0 and made["recompiles"] >= 0
    assert made["mode"] == "default"   # reduce-overhead (CUDA graphs) needs a GPU
    assert "compiled" not in eager.meta["notes"]
    assert anatomy.compiled_text(compiled).startswith(f"{made['graphs']} graph")
    assert anatomy.compiled_text(eager) == ""


@pytest.mark.parametrize("made, text", [
    ({"graphs": 1, "graph_breaks": 0, "recompiles": 0, "frames": 1}, "1 graph, 0 breaks"),
    ({"graphs": 3, "graph_breaks": 2, "recompiles": 1, "frames": 4},
     "3 graphs, 2 breaks, 1 recompile"),
    ({"graphs": 2, "graph_breaks": 0, "recompiles": 0, "frames": 2, "mode": "reduce-overhead"},
     "2 graphs, 0 breaks, CUDA graphs"),
])
def test_what_compiling_made_reads_in_words(made, text):
    class Run:
        meta = {"notes": {"compiled": made}}
    assert anatomy.compiled_text(Run()) == text
