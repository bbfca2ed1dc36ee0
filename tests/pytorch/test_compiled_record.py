"""A compiled run's record says what torch.compile made of its network: graphs, graph
breaks and recompiles; the anatomy table shows it beside the step's split."""
import pytest
import torch

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


@pytest.mark.parametrize("cuda_graphs", [False, True])
def test_a_static_graph_asks_for_cuda_graphs_only_where_the_caller_does_not_capture(
        monkeypatch, cuda_graphs):
    """On a GPU with inductor, graph='static' compiles with mode='reduce-overhead' (the
    network's CUDA graphs), except where the caller captures the whole step itself (a
    graph nested in the step's capture would fail). torch.compile is stood in for: what is
    asked of it is the behaviour here."""
    from gpu_course.tracks.torch.train import compile_model
    monkeypatch.delenv("GPU_COURSE_COMPILE_BACKEND", raising=False)
    asked = {}

    def fake_compile(model, **kwargs):
        asked.update(kwargs)
        return torch.nn.Sequential(model)   # anything that can carry an attribute
    monkeypatch.setattr(torch, "compile", fake_compile)
    cfg = gc.Experiment(engine="pytorch", graph="static")
    compiled = compile_model(torch.nn.Linear(2, 2), cfg, torch.device("cuda"),
                             cuda_graphs=cuda_graphs)
    assert asked == ({"mode": "reduce-overhead", "dynamic": False} if cuda_graphs
                     else {"backend": "inductor", "dynamic": False})
    assert getattr(compiled, "course_compile_mode", "default") == \
        ("reduce-overhead" if cuda_graphs else "default")
