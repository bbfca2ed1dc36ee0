"""The tuned rung's whole-step path: eagerly on the CPU (the same operators a CUDA graph
records), captured and replayed where a GPU is present (marker `gpu`)."""
import numpy as np
import pytest
import torch

from gpu_course.tracks import torch as gc
from gpu_course.tracks.torch import static_step
from gpu_course.tracks.torch.gpu_loader import Batches, GpuLoader
from tools.op_count import count_ops


def replay_check(programs) -> dict:
    """What one CUDA graph of the first of `programs` (the same code counted with
    keep_program=True, call after call) would get wrong when replayed for all of them:
    'differs' (calls whose program is not the first's: a changing Python number or
    branch would be baked into the graph), 'syncs' (host reads), 'host_tensors' (device
    operators given a CPU tensor, whose value a graph would bake in), 'devices' (on a GPU
    only "cuda": an operator on CPU tensors alone is not captured and would not run at
    replay), and the first call's operator count and operators by name."""
    first = programs[0]
    return {"differs": [i for i, p in enumerate(programs) if p.program != first.program],
            "syncs": sum(p.syncs for p in programs),
            "host_tensors": sorted({n for p in programs for n in p.host_tensors}),
            "devices": sorted(set().union(*(p.devices for p in programs))),
            "ops": first.launching, "by_name": first.by_name}


def check_static(stepper, steps: int = 3) -> dict:
    """Run `steps` steps eagerly (after two to create the optimizer state) recording the
    operators of each; return what a CUDA graph of one of them would get wrong
    (`replay_check`)."""
    for _ in range(2):
        stepper.optimizer.zero_grad(set_to_none=True)
        stepper.step_fn()
    programs = []
    for _ in range(steps):
        stepper.optimizer.zero_grad(set_to_none=True)
        programs.append(count_ops(stepper.step_fn, keep_program=True))
    return replay_check(programs)


def _setup(small_cfg, device="cpu", seed=0):
    cfg = small_cfg.replace(optimizer="lars", lr_scheduler="onecycle", data_on_gpu=True,
                            graph="static", optimizer_params=(("eta", 0.1),), epochs=2)
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (128, 32, 32, 3), dtype=np.uint8)
    loader = GpuLoader(images, np.arange(128) % 10, Batches(32, seed=1), device)
    torch.manual_seed(seed)
    net = gc.get_model("tiny").to(device)
    return cfg, loader, net, gc.make_optimizer(net, cfg)


def test_the_static_step_trains_exactly_as_the_eager_loop(small_cfg):
    cfg, loader, net, opt = _setup(small_cfg)
    steps = len(loader)
    stepper = static_step.StaticStep(net, opt, loader, cfg, steps)
    twin_cfg, twin_loader, twin, twin_opt = _setup(small_cfg)
    scheduler = gc.lr_scheduler(twin_cfg, steps, twin_opt)
    for epoch in range(2):
        stepper.start_epoch(epoch)
        for _ in range(steps):
            stepper.step()
        twin_loader.set_epoch(epoch)
        for x, y in twin_loader:  # the ordinary loop: batches, step, scheduler
            twin_opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(twin(x), y).backward()
            last_lr = twin_opt.param_groups[0]["lr"]
            twin_opt.step()
            scheduler.step()
    for a, b in zip(net.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert stepper.lr_of_last_step() == pytest.approx(last_lr, rel=1e-6)
    loss_sum, correct = stepper.read_totals()
    assert loss_sum > 0 and 0 <= correct <= steps * 32


def test_every_step_dispatches_the_same_program_with_no_host_read(small_cfg):
    """What a CUDA graph replays is what was recorded at capture: any Python number that
    changes between steps (a learning rate as a float, a first-step branch) would be
    baked in. Two steps' operator lists, arguments and shapes must be identical."""
    cfg, loader, net, opt = _setup(small_cfg)
    stepper = static_step.StaticStep(net, opt, loader, cfg, len(loader))
    stepper.start_epoch(0)
    found = check_static(stepper, steps=2)
    assert found["differs"] == [] and found["syncs"] == 0, found
    assert "_local_scalar_dense" not in found["by_name"]
    # and the learning rate did move on between those steps, on the device
    assert stepper.hyper[0].item() == pytest.approx(stepper.host_table[3, 0].item())


def test_a_python_float_learning_rate_is_caught(small_cfg):
    cfg, loader, net, opt = _setup(small_cfg)
    stepper = static_step.StaticStep(net, opt, loader, cfg, len(loader))
    stepper.start_epoch(0)
    original = stepper.step_fn

    def with_a_float_lr():
        opt.param_groups[0]["lr"] = float(stepper.host_table[stepper.calls, 0])
        stepper.calls += 1
        original()
    stepper.step_fn = with_a_float_lr
    assert check_static(stepper, steps=2)["differs"] == [1]


def test_the_step_gives_no_host_tensor_to_device_work(small_cfg):
    """On the meta device (shapes, no data: the CPU stands in for a GPU) every operator
    of the step sees device tensors only: a CUDA graph would bake in the value of any
    CPU tensor given to a device kernel, and would not replay work on CPU tensors."""
    cfg, loader, net, opt = _setup(small_cfg, device="meta")
    stepper = static_step.StaticStep(net, opt, loader, cfg, len(loader))
    stepper.start_epoch(0)
    found = check_static(stepper)
    assert found["host_tensors"] == [] and found["devices"] == ["meta"], found
    assert found["differs"] == [] and found["syncs"] == 0
    opt.param_groups[0]["lr"] = torch.tensor(0.1)  # a host learning rate: caught
    assert check_static(stepper)["host_tensors"]


def test_train_takes_the_static_step_and_records_setup_time(small_cfg, monkeypatch):
    monkeypatch.setenv(gc.COMPILE_BACKEND_ENV, "aot_eager")
    cfg = small_cfg.replace(optimizer="lars", lr_scheduler="onecycle", data_on_gpu=True,
                            graph="static", max_steps=5, warmup_steps=4)
    # (config.patch, not monkeypatch: undoing would delete the option from dynamo's config)
    with torch._dynamo.config.patch(error_on_recompile=True):  # static shapes
        run = gc.train(cfg, progress=False, verbose=False)
    assert run.status == "finished" and run.config["graph"] == "static"
    notes = run.meta["notes"]
    assert notes["setup_s"] > 0 and notes["cuda_graph"] is False  # no GPU: eager steps
    assert list(run.epochs["steps"]) == [5]
    assert run.epochs[["loss", "train_acc", "val_acc", "lr"]].notna().all(axis=None)


def test_other_runs_keep_the_ordinary_loop(small_cfg):
    cfg, loader, net, opt = _setup(small_cfg)
    assert static_step.applies(cfg, loader, opt) is None
    assert "GpuLoader" in static_step.applies(cfg, [], opt)
    assert "LARS" in static_step.applies(cfg, loader, torch.optim.SGD(net.parameters(), 0.1))
    assert static_step.applies(cfg.replace(graph="hybrid"), loader, opt)
    assert static_step.applies(cfg, loader, opt, world_size=2)


# -- on a GPU -------------------------------------------------------------------------------
@pytest.mark.gpu
def test_the_captured_step_replays_what_the_eager_step_does(small_cfg):
    cfg, loader, net, opt = _setup(small_cfg, device="cuda")
    steps = len(loader)
    graphed = static_step.StaticStep(net, opt, loader, cfg.replace(dtype="bfloat16"), steps)
    cfg2, loader2, net2, opt2 = _setup(small_cfg, device="cuda")
    eager = static_step.StaticStep(net2, opt2, loader2, cfg2.replace(dtype="bfloat16"), steps,
                                   use_graph=False)
    for epoch in range(2):
        graphed.start_epoch(epoch)
        eager.start_epoch(epoch)
        for _ in range(steps):
            graphed.step()
            eager.step()
    assert graphed.graph is not None and graphed.setup_s > 0
    for a, b in zip(net.parameters(), net2.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(graphed.totals, eager.totals, rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
def test_the_captured_step_reads_no_host_tensor(small_cfg):
    cfg, loader, net, opt = _setup(small_cfg, device="cuda")
    stepper = static_step.StaticStep(net.to(memory_format=torch.channels_last), opt, loader,
                                     cfg.replace(dtype="bfloat16"), len(loader))
    stepper.start_epoch(0)
    found = check_static(stepper, steps=2)  # 2 + 2 steps: the epoch's 4
    assert found["differs"] == [] and found["syncs"] == 0
    assert found["host_tensors"] == [] and found["devices"] == ["cuda"], found


def test_a_plan_drawn_ahead_is_the_plan_the_epoch_would_draw(small_cfg):
    """run_epochs draws the next epoch's random numbers while the GPU still trains (before
    the epoch's sync); the epoch that starts then cuts exactly the batches it would have."""
    cfg, loader, net, opt = _setup(small_cfg)
    ahead = static_step.StaticStep(net, opt, loader, cfg, len(loader))
    ahead.plan_ahead(1)
    ahead.start_epoch(1)
    twin = static_step.StaticStep(net, opt, loader, cfg, len(loader))
    twin.start_epoch(1)
    assert torch.equal(ahead.plan, twin.plan) and ahead._ahead is None
    ahead.plan_ahead(5)     # a plan for another epoch is not used
    ahead.start_epoch(2)
    twin.start_epoch(2)
    assert torch.equal(ahead.plan, twin.plan)

