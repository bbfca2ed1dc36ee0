"""Where lesson 07's processes run on a machine (`plan`): one GPU a device when there are
two or more, else two CPU "devices" sharing the cores, and the threads each gets."""
from __future__ import annotations

from dataclasses import dataclass

from ..engines import check_engine
from ..env.cores import thread_counts, threads_per_process
from .localhosts import backend as _backend


@dataclass(frozen=True)
class Plan:
    """Where lesson 07 runs (one GPU has nothing to scale across, and NCCL refuses two ranks on it)."""

    engine: str
    gpus: int
    cores: int
    sizes: "Sizes"    # the lesson's (gpu_course.lessons.Sizes)
    nodes: int = 2

    @property
    def on_gpu(self) -> bool:
        return self.gpus >= 2

    @property
    def counts(self) -> tuple:
        """Device counts to train on one host: powers of two up to every GPU, or 1 and 2."""
        return tuple(thread_counts(self.gpus)) if self.on_gpu else (1, 2)

    @property
    def job_gpus(self) -> int:
        """GPUs the multi-process jobs may use: every one, or none (the CPU, gloo)."""
        return self.gpus if self.on_gpu else 0

    @property
    def per_host(self) -> int:
        """Processes (or GPUs of a parameter-server worker) per local "host"."""
        return max(1, self.gpus // self.nodes) if self.on_gpu else 1

    @property
    def backend(self) -> str:
        """NCCL with a GPU for every process of the largest job, else gloo."""
        return _backend(self.job_gpus, max(max(self.counts), self.nodes * self.per_host))

    @property
    def threads(self) -> int:
        """Compute threads a process: the largest job's share, for every run alike."""
        processes = self.nodes if self.engine == "gluon" else \
            max(max(self.counts), self.nodes * self.per_host)
        return threads_per_process(processes, self.cores)

    @property
    def train_sizes(self):
        """The lesson's sizes, with fewer images where the "devices" share a CPU."""
        if self.on_gpu:
            return self.sizes
        return self.sizes.replace(train_size=min(self.sizes.train_size, self.sizes.cpu_train_size),
                                  test_size=min(self.sizes.test_size, self.sizes.cpu_test_size))

    @property
    def exercise_sizes(self):
        """Exercise 07.1's sizes (the `cpu_exercise_*` ones where the devices share a CPU)."""
        cpu = "" if self.on_gpu else "cpu_"
        return self.train_sizes.replace(train_size=getattr(self.sizes, f"{cpu}exercise_size"),
                                        batch_size=getattr(self.sizes, f"{cpu}exercise_batch"))

    def devices(self, k: int) -> list[str] | None:
        """PyTorch: the devices of a k-process run (None: the GPUs, one a process)."""
        return None if self.on_gpu else ["cpu"] * k

    def __repr__(self) -> str:
        pytorch = self.engine == "pytorch"
        unit = "processes" if pytorch else "device contexts"
        if self.on_gpu:
            how = "process, NCCL between them" if pytorch else "context, kvstore='device'"
            where = f"{self.gpus} GPUs: one GPU a {how}"
        else:
            why = ("no GPU" if self.gpus == 0 else
                   "one GPU, left out: NCCL needs a GPU for every process" if pytorch else
                   "one GPU, left out: nothing to scale across")
            over, images = " over gloo" if pytorch else "", self.train_sizes.train_size
            where = f"{why}: 2 CPU {unit}{over} sharing {self.cores} cores, {images} images an epoch"
        return f"This machine has {where}; {unit} to try: {', '.join(map(str, self.counts))}"

    __str__ = __repr__


def plan(engine: str, gpus: int, cores: int, sizes, nodes: int = 2) -> Plan:
    """Where lesson 07 runs (see Plan) on a machine with `gpus` GPUs and `cores` cores."""
    check_engine(engine)
    if gpus < 0 or cores < 1 or nodes < 1:
        raise ValueError(f"gpus={gpus!r}, cores={cores!r}, nodes={nodes!r}: need gpus >= 0, "
                         "cores >= 1, nodes >= 1")
    return Plan(engine, gpus, cores, sizes, nodes)
