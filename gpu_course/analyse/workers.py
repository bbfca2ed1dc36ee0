"""What lesson 02 measures of loader workers: the knee of a sweep, the GPU's utilisation
spread, the later epochs' time, and what each worker process costs in memory."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import metrics, noise

KNEE = 0.9          # the knee: the fewest workers within 10 % of the best samples/s


def workers(run) -> int:
    return int(run.config.get("num_workers") or 0)


def util_spread(run) -> float:
    """Std of GPU-Util (points) over the steady samples; NaN without a GPU."""
    return float(metrics._column(run.gpu, "util_gpu")[metrics.steady_samples(run)].std())


def later_epochs_s(run) -> float:
    """Mean time of the epochs after the first (which starts the workers); NaN with one."""
    return float(metrics._column(run.epochs, "epoch_time_s").iloc[1:].mean())


def knee(runs) -> list[bool]:
    """Whether each run is the knee: the fewest workers within KNEE of the best, or its noise."""
    rates = [metrics.samples_per_sec(r) for r in runs]
    top = max(rates, key=lambda rate: rate if math.isfinite(rate) else -math.inf)
    best = runs[rates.index(top)]
    near = [rate >= KNEE * top or noise.compare(best, r, varies=("num_workers",)).kind
            == noise.Kind.WITHIN_NOISE for r, rate in zip(runs, rates)]
    fewest = min((workers(r) for r, ok in zip(runs, near) if ok), default=None)
    return [ok and workers(r) == fewest for r, ok in zip(runs, near)]


def worker_memory(make_loader, counts) -> pd.DataFrame:
    """What each loader worker costs in RSS and USS, by psutil, for each count."""
    import psutil
    me, total = psutil.Process(), psutil.virtual_memory().total
    rows = []
    for n in [c for c in counts if c > 0]:
        before = {p.pid for p in me.children(recursive=True)}
        loader = make_loader(n)
        batches = iter(loader)
        next(batches)                      # the workers are up and have done real work
        infos = []
        for process in me.children(recursive=True):
            if process.pid not in before:
                try:
                    infos.append(process.memory_full_info())
                except psutil.Error:       # it ended between listing and reading
                    pass
        uss = np.mean([i.uss for i in infos]) / 2**20 if infos else math.nan
        rows.append({"num_workers": n, "processes": len(infos),
                     "rss_mib_per_worker": np.mean([i.rss for i in infos]) / 2**20
                     if infos else math.nan,
                     "uss_mib_per_worker": uss, "uss_mib_all": uss * len(infos),
                     "share_of_ram_pct": 100 * uss * len(infos) * 2**20 / total})
        del batches, loader
    return pd.DataFrame(rows, columns=["num_workers", "processes", "rss_mib_per_worker",
                                       "uss_mib_per_worker", "uss_mib_all", "share_of_ram_pct"])
