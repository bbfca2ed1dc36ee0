"""Compiled rungs have static shapes and compile once: no recompilation inside a run,
even after an earlier run in the same process compiled other shapes (as the ladder does)."""
import torch
from torch._dynamo.utils import counters

from gpu_course.tracks import torch as gc


def test_a_run_compiles_one_static_graph_after_another_run(small_cfg, monkeypatch):
    monkeypatch.setenv(gc.COMPILE_BACKEND_ENV, "aot_eager")
    earlier = small_cfg.replace(graph="hybrid", max_steps=2, batch_size=16)
    gc.train(earlier, progress=False, verbose=False)  # another batch size, same forward
    counters.clear()
    # (config.patch, not monkeypatch: undoing would delete the option from dynamo's config)
    with torch._dynamo.config.patch(error_on_recompile=True):
        run = gc.train(small_cfg.replace(graph="hybrid", max_steps=3, epochs=2,
                                         dtype="bfloat16", channels_last=True),
                       progress=False, verbose=False)
    assert run.status == "finished" and list(run.epochs["steps"]) == [3, 3]
    assert counters["stats"]["unique_graphs"] == 1  # compiled once; never recompiled
    assert not counters["recompiles"]


def test_compile_asks_for_static_shapes(small_cfg, monkeypatch):
    seen = {}
    real = torch.compile

    def spy(model, **kwargs):
        seen.update(kwargs)
        return real(model, **kwargs)
    monkeypatch.setattr(torch, "compile", spy)
    monkeypatch.setenv(gc.COMPILE_BACKEND_ENV, "aot_eager")
    from gpu_course.tracks.torch.train import compile_model
    compile_model(gc.get_model("tiny"), small_cfg.replace(graph="hybrid"), torch.device("cpu"))
    assert seen["dynamic"] is False
