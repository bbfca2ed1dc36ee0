"""What gpu_course's bookkeeping costs a run: `gc.train` against a plain hand-written loop.

Both sides get the same network (same seed), the same DataLoader and optimizer settings.
The plain loop is the framework's training step and nothing else (no metrics at all:
the strictest bar); `gc.train` adds the step timer, the loss/accuracy sums kept on the
device, the progress bar, the monitor thread and the run record. Runs alternate
(plain, harness, then harness, plain, ...) so that drift in the machine's speed hits
both, and each side's second epoch is compared (the first starts workers and graphs).
Epoch time is measured the same way on both sides: first batch asked for -> the sync
after the last step; validation is outside it.

    python -m tools.harness_overhead --engine gluon --model resnet20 --pairs 5
    python -m tools.harness_overhead --engine pytorch --model resnet20 --pairs 5
    python -m tools.harness_overhead --engine gluon --same-net --pairs 8
    python -m tools.harness_overhead --engine pytorch --data-on-gpu \
        --train-size 51200 --batch-size 256 --pairs 7     # on a GPU: no loader workers

On a GPU, loader workers (fresh for every run) make each side's rate vary by more than
the 3% to be seen (16-22k samples/s between pairs on an H200, 2026-11-23); with the
data set on the GPU (--data-on-gpu) both sides get the same batches with no process
in between.

--same-net (Gluon) takes everything but the bookkeeping out of the comparison: one
network, trainer and loader, and epochs alternate between the plain loop and the
course's loop inside `gc.record`, so machine drift between pairs is seconds, not runs.

It prints each pair, then the median ratio of samples/s (harness / plain; target >= 0.97)
and the machine's load average while it ran: on a shared machine say which it was.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import tempfile
import warnings

from gpu_course.analyse import metrics
from gpu_course.config import Experiment
from gpu_course.measure.harness import Harness, Output, Ran
from gpu_course.measure.timing import clock


# -- the plain loops ------------------------------------------------------------------
def plain_gluon(gc, cfg, train_iter) -> float:
    """Seconds of the second epoch of a plain Gluon loop (split, record, backward, step)."""
    import mxnet as mx
    from mxnet import autograd, gluon
    devices, _ = gc.try_devices(cfg.num_gpus)
    mx.random.seed(cfg.seed)
    net = gc.get_model(cfg)
    net.initialize(mx.init.Xavier(), ctx=devices)
    if cfg.graph != "eager":
        net.hybridize(static_alloc=cfg.graph == "static", static_shape=cfg.graph == "static")
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": cfg.lr, "wd": cfg.wd, "momentum": cfg.momentum})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(2):
        tic = clock()
        for data, label in train_iter:
            xs, ys = gc.split(data, label, devices)
            with autograd.record():
                losses = [loss_fn(net(x), y) for x, y in zip(xs, ys)]
            autograd.backward(losses)
            trainer.step(data.shape[0])
        mx.nd.waitall()  # the epoch's one sync
        seconds = clock() - tic
    return seconds


def plain_pytorch(gc, cfg, train_iter) -> float:
    """Seconds of the second epoch of a plain PyTorch loop."""
    import torch
    import torch.nn.functional as F
    device = gc.try_devices(cfg.num_gpus)[0][0]
    torch.manual_seed(cfg.seed)
    net = gc.get_model(cfg).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=cfg.momentum,
                          weight_decay=cfg.wd)
    for _ in range(2):
        tic = clock()
        for x, y in train_iter:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss = F.cross_entropy(net(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # the epoch's one sync
        seconds = clock() - tic
    return seconds


PLAIN = {"gluon": plain_gluon, "pytorch": plain_pytorch}


# -- the comparison -------------------------------------------------------------------
def compare(engine: str, cfg: Experiment, pairs: int = 3, log=print,
            threads: int | None = None) -> dict:
    """Alternate plain and gc.train runs; samples/s of each side's second epoch and the
    median ratio harness / plain. `threads`: PyTorch's intra-op threads for both sides
    (held fixed: on a shared CPU the thread count decides more than the harness)."""
    from gpu_course.ladder import adapter
    gc = adapter(engine)
    if threads is not None and engine == "pytorch":
        import torch
        torch.set_num_threads(threads)
    cfg = cfg.replace(engine=engine, epochs=2, warmup_steps=0, mock="none", max_steps=None)
    if cfg.data_on_gpu and engine == "pytorch":
        from gpu_course.tracks.torch.gpu_loader import gpu_loaders
        device = gc.try_devices(cfg.num_gpus)[0][0]
        train_set, val_iter = gpu_loaders(cfg, device)

        def new_loader():
            return train_set  # on the device already: nothing to start per run
    else:
        train_set, val_set = gc.load_datasets(cfg)
        val_iter = gc.make_loader(val_set, cfg.replace(batch_size=cfg.test_size), train=False)

        def new_loader():
            return gc.make_loader(train_set, cfg)  # fresh workers for every run
    rates = {"plain": [], "harness": []}
    load = []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(pairs):
            for kind in (("plain", "harness") if pair % 2 == 0 else ("harness", "plain")):
                loader = new_loader()
                samples = len(loader) * cfg.batch_size * max(cfg.num_gpus, 1)
                if kind == "plain":
                    rate = samples / PLAIN[engine](gc, cfg, loader)
                else:
                    run = gc.train(cfg, train_iter=loader, val_iter=val_iter, runs_dir=tmp,
                                   progress=False, verbose=False)
                    rate = run.epochs["samples"].iloc[1] / run.epochs["epoch_time_s"].iloc[1]
                rates[kind].append(rate)
                load.append(os.getloadavg()[0])
                log(f"pair {pair + 1} {kind:8s} {rate:9.1f} samples/s")
                del loader
    ratios = [h / p for h, p in zip(rates["harness"], rates["plain"])]
    return {"plain": statistics.median(rates["plain"]),
            "harness": statistics.median(rates["harness"]), "ratio": statistics.median(ratios),
            "ratios": ratios, "load_mean": statistics.mean(load), "load_max": max(load)}


def interleaved_epochs(cfg: Experiment, rounds: int = 8, log=print) -> dict:
    """Gluon: one network, trainer and loader; epochs alternate (ABBA) between the plain
    loop and the course's own loop (`gluon.loop.fit`) inside `gc.record`. What differs
    is the bookkeeping and nothing else (no second network, loader or process state), and
    each pair is a few seconds apart, so a shared machine's drift cancels. Returns the
    medians of each side's samples/s and of the pairs' ratios (harness / plain)."""
    import mxnet as mx
    from mxnet import autograd, gluon

    from gpu_course.tracks.gluon.loop import fit
    from gpu_course.ladder import adapter
    gc = adapter("gluon")
    cfg = cfg.replace(engine="gluon", epochs=1, warmup_steps=0, mock="none", max_steps=None)
    parts = gc.build(cfg)
    net, train_iter, _, trainer = parts
    _, val_set = gc.load_datasets(cfg.replace(test_size=cfg.batch_size))
    val_iter = gc.make_loader(val_set, cfg.replace(num_workers=0), train=False)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    samples = len(train_iter) * cfg.batch_size

    def plain() -> float:
        tic = clock()
        for data, label in train_iter:
            xs, ys = gc.split(data, label, parts.devices)
            with autograd.record():
                losses = [loss_fn(net(x), y) for x, y in zip(xs, ys)]
            autograd.backward(losses)
            trainer.step(data.shape[0])
        mx.nd.waitall()  # the epoch's one sync
        return samples / (clock() - tic)

    def harnessed(folder) -> float:
        with gc.record(parts, runs_dir=folder, progress=False, verbose=False) as rec:
            fit(rec, net, trainer, train_iter, val_iter, parts.devices)
        return metrics.samples_per_sec_all(rec.run)  # the epoch's samples / its time

    rates = {"plain": [], "harness": []}
    load = []
    with tempfile.TemporaryDirectory() as tmp:
        plain()  # warm-up: workers, memory pools, the first allocations
        for pair in range(rounds):
            for kind in (("plain", "harness") if pair % 2 == 0 else ("harness", "plain")):
                rate = plain() if kind == "plain" else harnessed(tmp)
                rates[kind].append(rate)
                load.append(os.getloadavg()[0])
                log(f"pair {pair + 1} {kind:8s} {rate:9.1f} samples/s")
    ratios = [h / p for h, p in zip(rates["harness"], rates["plain"])]
    return {"plain": statistics.median(rates["plain"]),
            "harness": statistics.median(rates["harness"]), "ratio": statistics.median(ratios),
            "ratios": ratios, "load_mean": statistics.mean(load), "load_max": max(load)}


def harness_cost_per_step(steps: int = 20_000, repeats: int = 5, progress: bool = True,
                          runs_dir=None) -> float:
    """Seconds the Harness adds to one step (best of `repeats`): the same loop over
    ready-made batches with no work in it, bare and inside a Harness."""
    batches = [(None, None)] * steps

    def bare() -> float:
        tic, seen = clock(), 0
        for _data, _label in batches:
            seen += 32  # the bookkeeping a plain loop does itself
        return clock() - tic

    def harnessed(folder) -> float:
        cfg = Experiment(name="step-cost", epochs=1, warmup_steps=0)
        with Harness(cfg, Ran(engine="gluon"),
                     output=Output(runs_dir=folder, progress=progress, verbose=False)) as h:
            for _ in h.epochs():
                tic = clock()
                for _data, _label in h.batches(batches, total=steps):
                    h.step(32, loss=2.3, correct=3)
                elapsed = clock() - tic
                h.end_epoch()
        return elapsed

    with tempfile.TemporaryDirectory() as tmp:
        with_harness = min(harnessed(runs_dir or tmp) for _ in range(repeats))
    return (with_harness - min(bare() for _ in range(repeats))) / steps


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", required=True, choices=sorted(PLAIN))
    parser.add_argument("--model", default="resnet20")
    parser.add_argument("--train-size", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-workers", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--data-on-gpu", action="store_true",
                        help="PyTorch: the data set and its augmentation on the GPU")
    parser.add_argument("--threads", type=int, default=None,
                        help="PyTorch intra-op threads, the same for both sides")
    parser.add_argument("--same-net", action="store_true",
                        help="Gluon: alternate epochs of one network, trainer and loader "
                             "(plain loop / the course's loop in gc.record) instead of runs")
    args = parser.parse_args(argv)
    if args.same_net and args.engine != "gluon":
        parser.error(f"--same-net is for --engine gluon (got --engine {args.engine})")
    warnings.simplefilter("ignore")  # the CPU-only monitor's notice, once per run
    cfg = Experiment(name="overhead", engine=args.engine, model=args.model,
                     train_size=args.train_size, test_size=256, batch_size=args.batch_size,
                     num_workers=0 if args.data_on_gpu else args.num_workers,
                     data_on_gpu=args.data_on_gpu)
    with contextlib.redirect_stderr(io.StringIO()):  # the progress bars of the probe
        per_step = harness_cost_per_step()
    print(f"harness cost per step, no work in the step: {per_step * 1e6:.1f} us", flush=True)
    if args.same_net:
        result = interleaved_epochs(cfg, args.pairs)
        print("one network, trainer and loader; epochs alternated")
    else:
        result = compare(args.engine, cfg, args.pairs, threads=args.threads)
    harness = "gc.record + loop.fit" if args.same_net else "gc.train"
    print(f"{args.engine}: plain {result['plain']:.1f} samples/s, {harness} "
          f"{result['harness']:.1f} samples/s (medians); ratio harness/plain: median "
          f"{result['ratio']:.3f} over {args.pairs} pairs (min {min(result['ratios']):.3f}, "
          f"max {max(result['ratios']):.3f}); target >= 0.97")
    print(f"machine load while measuring: mean {result['load_mean']:.2f}, max "
          f"{result['load_max']:.2f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
