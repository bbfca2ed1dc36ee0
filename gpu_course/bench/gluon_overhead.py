"""What gpu_course costs a Gluon run: `gc.train` against a plain hand-written loop.

The plain loop is GluonCV's CIFAR-10 training loop (train_cifar10.py): split_and_load,
autograd.record, backward, trainer.step, the loss read every step. Both get the same
model, data, loader, optimizer and settings, and run alternately so that drift in the
machine's speed hits both. Epoch time is measured the same way for both (first batch
requested -> `mx.nd.waitall()` after the last step; validation outside), and epochs
after the first (start-up) are compared.

    python -m gpu_course.bench.gluon_overhead --model tiny --train-size 4096 --repeats 3

A shared or busy machine makes whole-run throughput swing by far more than 3%, so the
benchmark also measures the harness alone: the time it adds to a step with no work in
it (timer, loss/accuracy sums, progress bar, the monitor thread), best of several runs.
Divided by a real step time it is the harness's share of throughput on any machine.

`--metric gluoncv` makes the plain loop count accuracy with mx.metric.Accuracy as the
script does (two more host reads per device per step); the default counts it on the
device and reads it with the loss, as gc.train does, so only the harness differs.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import tempfile
import time
import warnings

import mxnet as mx
from mxnet import autograd, gluon

from gpu_course import gluon as gc
from gpu_course.gluon.train import split, step_stats
from gpu_course.harness import Harness
from gpu_course.timing import clock


def plain_train(cfg, train_iter, val_iter, devices, metric: str = "lean"
                ) -> list[tuple[int, float]]:
    """GluonCV-style loop, validation after each epoch (untimed, as in gc.train);
    returns (samples, seconds) per epoch."""
    mx.random.seed(cfg.seed)
    net = gc.get_model(cfg)
    net.initialize(mx.init.Xavier(), ctx=devices)
    if cfg.graph != "eager":
        net.hybridize(static_alloc=cfg.graph == "static", static_shape=cfg.graph == "static")
    trainer = gluon.Trainer(net.collect_params(), cfg.optimizer,
                            {"learning_rate": cfg.lr, "wd": cfg.wd, "momentum": cfg.momentum},
                            kvstore=cfg.kvstore)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    accuracy = mx.metric.Accuracy()
    epochs = []
    for _ in range(cfg.epochs):
        accuracy.reset()
        train_loss, correct, samples = 0.0, 0, 0
        tic = time.perf_counter()
        for data, label in train_iter:
            xs, ys = split(data, label, devices)
            with autograd.record():
                outputs = [net(x) for x in xs]
                losses = [loss_fn(out, y) for out, y in zip(outputs, ys)]
            for loss in losses:
                loss.backward()
            trainer.step(data.shape[0])
            if metric == "gluoncv":
                train_loss += sum(loss.sum().asscalar() for loss in losses)
                accuracy.update(ys, outputs)
            else:
                loss_sum, hits = step_stats(losses, outputs, ys)
                train_loss += loss_sum
                correct += hits
            samples += data.shape[0]
        mx.nd.waitall()
        epochs.append((samples, time.perf_counter() - tic))
        gc.evaluate(net, val_iter, devices)
    return epochs


def harness_train(cfg, train_iter, val_iter, devices, runs_dir) -> list[tuple[int, float]]:
    """gc.train on the same loaders; returns (samples, seconds) per epoch."""
    run = gc.train(cfg, train_iter=train_iter, val_iter=val_iter, devices=devices,
                   runs_dir=runs_dir, progress=False, verbose=False)
    return list(zip(run.epochs["samples"].astype(int), run.epochs["epoch_time_s"]))


def steady_rate(epochs: list[tuple[int, float]]) -> float:
    """Samples/s over the epochs after the first."""
    rest = epochs[1:] or epochs
    return sum(n for n, _ in rest) / sum(t for _, t in rest)


def compare(cfg, repeats: int = 3, metric: str = "lean", runs_dir=None,
            log=print) -> dict:
    """Alternate plain and gc.train runs; returns the samples/s of each and the ratio."""
    devices, _ = gc.try_devices(cfg.num_gpus)
    cfg = cfg.replace(mock="none", max_steps=None, lr_scheduler="none", warmup_epochs=0)
    train_set, val_set = gc.load_datasets(cfg)
    val_iter = gc.make_loader(val_set, cfg, train=False)
    plain, harness, cpu = [], [], {"plain": [], "harness": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            for kind in (("plain", "harness") if r % 2 == 0 else ("harness", "plain")):
                loader = gc.make_loader(train_set, cfg)  # fresh workers for every run
                cpu_start = time.process_time()
                if kind == "plain":
                    rate = steady_rate(plain_train(cfg, loader, val_iter, devices, metric))
                    plain.append(rate)
                else:
                    rate = steady_rate(harness_train(cfg, loader, val_iter, devices,
                                                     runs_dir or tmp))
                    harness.append(rate)
                # CPU seconds of this process for the whole call (setup, record and
                # validation included; loader workers not): steadier than wall time
                # on a busy machine
                cpu[kind].append(time.process_time() - cpu_start)
                log(f"repeat {r + 1} {kind:8s} {rate:9.1f} samples/s, "
                    f"{cpu[kind][-1]:.2f} CPU s")
                del loader
    # on a shared machine other work only ever slows a run down: the best of each side
    # is the steadiest estimate; the median is reported too
    result = {"plain": statistics.median(plain), "harness": statistics.median(harness),
              "plain_best": max(plain), "harness_best": max(harness)}
    result["ratio"] = result["harness"] / result["plain"]
    result["ratio_best"] = result["harness_best"] / result["plain_best"]
    result["plain_all"], result["harness_all"] = plain, harness
    result["cpu_ratio"] = statistics.median(cpu["harness"]) / statistics.median(cpu["plain"])
    result["cpu_ratio_best"] = min(cpu["harness"]) / min(cpu["plain"])
    return result


def harness_cost_per_step(steps: int = 20_000, repeats: int = 5, progress: bool = True,
                          runs_dir=None) -> float:
    """Seconds the Harness adds to one training step (best of `repeats`): the same loop
    over ready-made batches with no work in it, bare and inside a Harness."""
    batches = [(None, None)] * steps

    def bare() -> float:
        tic, seen = clock(), 0
        for _data, _label in batches:
            seen += 32  # the bookkeeping a plain loop does itself
        return clock() - tic

    def harnessed(folder) -> float:
        cfg = gc.Experiment(name="step-cost", epochs=1, warmup_steps=0)
        with Harness(cfg, engine="gluon", runs_dir=folder, progress=progress,
                     verbose=False) as h:
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
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--train-size", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--num-workers", type=int, default=1)
    parser.add_argument("--num-gpus", type=int, default=1)
    parser.add_argument("--graph", default="eager", choices=("eager", "hybrid", "static"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--metric", default="lean", choices=("lean", "gluoncv"))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # the CPU-only monitor's notice, once per run
    cfg = gc.Experiment(name="overhead", model=args.model, train_size=args.train_size,
                        test_size=512, batch_size=args.batch_size, epochs=args.epochs,
                        num_workers=args.num_workers, num_gpus=args.num_gpus,
                        graph=args.graph, warmup_steps=0)
    with contextlib.redirect_stderr(io.StringIO()):  # the progress bars of the probe
        per_step = harness_cost_per_step()
    print(f"harness cost per step (timer, sums, progress bar, monitor): "
          f"{per_step * 1e6:.1f} us; it reaches 3% of throughput only for steps shorter "
          f"than {per_step / 0.03 * 1e3:.2f} ms", flush=True)
    result = compare(cfg, args.repeats, args.metric)
    print(f"CPU time of the whole call, gc.train / plain: median "
          f"{result['cpu_ratio']:.3f}, best {result['cpu_ratio_best']:.3f}")
    step_s = cfg.batch_size * max(cfg.num_gpus, 1) / result["plain_best"]
    print(f"plain step here: {step_s * 1e3:.1f} ms -> harness share "
          f"{per_step / step_s * 100:.3f}%")
    for stat, suffix in (("median", ""), ("best", "_best")):
        ratio = result["ratio" + suffix]
        print(f"{stat:6s} of {args.repeats}: plain Gluon loop {result['plain' + suffix]:.1f} "
              f"samples/s, gc.train {result['harness' + suffix]:.1f} samples/s, ratio "
              f"{ratio:.3f} (harness cost {(1 - ratio) * 100:+.1f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
