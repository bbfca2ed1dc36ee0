"""`gpu-course distributed`: one process, then a job of local hosts, and the scaling table."""
from __future__ import annotations

from ..config import Experiment
from ..env.cores import loader_workers, threads_per_process
from .localhosts import LocalJob
from .scaling import implied_busbw, implied_exposed_time, measured_efficiency, predict

# the talk: batch 640 per GPU, MXNet on V100s (p3.8xlarge), 1 GPU -> 4 GPUs, 29 loader
# workers; the same 4-GPU job with one loader worker (lesson 02): ~1,500 samples/s, 60+ s
TALK = {"k": 4, "batch": 640, "samples_per_sec_1": 17_000, "samples_per_sec_k": 50_000,
        "workers": 29, "epoch_s_k": 4.0, "samples_per_sec_k_one_worker": 1_500,
        "epoch_s_k_one_worker": 60,  # "60+": at least
        "grad_bytes": 272_474 * 2}  # ResNet-20's trainable parameters (both tracks) in float16
# the lecture's links (GB/s) the model extrapolates to
LINKS = {"10 Gbps Ethernet": 1.0, "56 Gbps Mellanox": 6.8, "NVLink": 40.0}
HOP_LATENCY_S = 20e-6   # the model's latency a hop: a typical network's


def experiment(engine: str, quick: bool = False, procs_on_host: int = 1) -> Experiment:
    """The job: ResNet-20 on the synthetic CIFAR stand-in, fixed batch per process."""
    sizes = (dict(train_size=1024, test_size=128, epochs=1, batch_size=32, warmup_steps=3) if quick
             else dict(train_size=8192, test_size=1024, epochs=2, batch_size=64, warmup_steps=10))
    return Experiment(name="distributed", engine=engine, num_gpus=0, lr_base_batch=128,
                      num_workers=loader_workers(procs_on_host), monitor_interval=0.5, **sizes)


def gradient_bytes(cfg: Experiment) -> int:
    """Bytes of all trainable parameters (float32): what every step all-reduces."""
    if cfg.engine == "pytorch":
        from ..tracks.torch.models import get_model
        return sum(p.numel() * 4 for p in get_model(cfg).parameters() if p.requires_grad)
    import mxnet as mx
    from ..tracks.gluon.models import get_model
    net = get_model(cfg)
    net.initialize()
    net(mx.nd.zeros((1, 3, cfg.image_size, cfg.image_size)))  # shapes are inferred here
    return sum(p.data().size * 4 for p in net.collect_params().values() if p.grad_req != "null")


def run(engine: str, nodes: int = 2, procs_per_node: int = 1, quick: bool = False,
        runs_dir=None, verbose: bool = False):
    """(one-process run, the job's run), every process with the same share of the cores."""
    k = nodes * procs_per_node
    cfg = experiment(engine, quick, k)
    one, job = cfg.replace(name="distributed k=1"), cfg.replace(name=f"distributed k={k}")
    threads = threads_per_process(k)
    local = LocalJob(runs_dir, verbose)
    if engine == "pytorch":
        from ..tracks.torch.multinode import launch_local
        base = launch_local(one, 1, 1, threads, local)
        return base, launch_local(job, nodes, procs_per_node, threads, local)
    from ..tracks.gluon import dist  # k=1 is one worker with one server: the same push and pull
    base = dist.launch_local(one, workers=1, servers=1, threads=threads, job=local)
    return base, dist.launch_local(job, workers=k, servers=nodes, threads=threads, job=local)


def step_seconds(run) -> float:
    """The job's seconds per step over the timed steps: the slowest rank's."""
    ranks = run.meta["notes"].get("ranks") or [{"epochs": run.epochs.to_dict("records")}]
    per_rank = []
    for r in ranks:
        epochs = [e for e in r["epochs"] if e.get("samples_per_sec") == e.get("samples_per_sec")
                  and e.get("samples_per_sec")]  # epochs with timed steps (not NaN)
        if epochs:
            per_step = sum(e["samples"] for e in epochs) / sum(e["steps"] for e in epochs)
            rate = sum(e["samples_per_sec"] for e in epochs) / len(epochs)
            per_rank.append(per_step / rate)  # the job's images per step / its images per s
        elif r["epochs"]:  # no step counted as timed: every step's own time, warm-up included
            busy = sum((e.get("data_wait_s") or 0) + (e.get("compute_s") or 0) for e in r["epochs"])
            per_rank.append(busy / max(1, sum(e.get("steps") or 0 for e in r["epochs"])))
    if not per_rank or not max(per_rank) > 0:
        raise ValueError(f"{run.path}: no step times recorded")
    return max(per_rank)


def scaling_table(base, job, k: int, batch: int, grad_bytes: int) -> list[dict]:
    """Measured rows (here and the talk's), then the model's predictions over the links."""
    s1, t = base.summary["samples_per_sec"], TALK
    rows = [{"what": "measured", "k": 1, "samples_per_sec": s1, "efficiency": 1.0},
            _measured("measured", s1, job.summary["samples_per_sec"], k, batch, grad_bytes),
            _measured("talk, 4 V100 batch 640", t["samples_per_sec_1"], t["samples_per_sec_k"], t["k"],
                      t["batch"], t["grad_bytes"])]
    steps = {"this machine's step": (step_seconds(base), grad_bytes),
             "V100 step": (t["batch"] / t["samples_per_sec_1"], t["grad_bytes"])}
    for label, (t_compute, nbytes) in steps.items():
        for link, gbps in LINKS.items():
            for row in predict([4, 64], t_compute, nbytes, gbps * 1e9, latency=HOP_LATENCY_S):
                rows.append({"what": f"model, {label}, {link}", "k": row["k"],
                             "efficiency": row["efficiency"],
                             "exposed_ms": 1e3 * row["exposed_s"]})
    return rows


def _measured(what: str, s1: float, sk: float, k: int, batch: int, grad_bytes: float) -> dict:
    """A row of k devices measured at sk samples/s against one at s1."""
    return {"what": what, "k": k, "samples_per_sec": sk, "efficiency": measured_efficiency(s1, sk, k),
            "exposed_ms": 1e3 * implied_exposed_time(s1, sk, k, batch),
            "implied_busbw_GBps": implied_busbw(s1, sk, k, batch, grad_bytes) / 1e9}


def format_table(rows: list[dict]) -> str:
    def num(v, fmt):
        return "" if v is None else format(v, fmt)
    lines = [f"{'':<44} {'k':>3} {'samples/s':>10} {'efficiency':>10} {'lost ms/step':>12} "
             f"{'implied busbw GB/s':>18}"]
    for r in rows:
        lines.append(f"{r['what']:<44} {r['k']:>3} {num(r.get('samples_per_sec'), ',.0f'):>10} "
                     f"{num(r.get('efficiency'), '.0%'):>10} {num(r.get('exposed_ms'), '.2f'):>12} "
                     f"{num(r.get('implied_busbw_GBps'), '.3g'):>18}")
    return "\n".join(lines)
