"""Where to train: CUDA GPUs when there are any, the CPU otherwise; and what a device
costs to wait for."""
from __future__ import annotations

import re

import torch
import torch.distributed as dist

from ...config import check_gpus
from ...measure.records import OutOfMemory


def gpu_count() -> int:
    """Number of CUDA GPUs PyTorch can use (0 on a machine without a GPU or driver)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def place() -> tuple[int, int]:
    """(rank, world size) of this process in its process group, else (0, 1)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def try_devices(num_gpus: int) -> tuple[list[torch.device], str | None]:
    """`num_gpus` devices: cuda:0..n-1, or the CPU n times with a notice when there is no GPU."""
    kind, count, notice = check_gpus(num_gpus, gpu_count())
    if kind == "gpu":
        return [torch.device(f"cuda:{i}") for i in range(count)], notice
    return [torch.device("cpu")] * count, notice


def describe(devices: list[torch.device]) -> str:
    if len(devices) > 1 and all(d.type == "cpu" for d in devices):
        return f"{len(devices)} x cpu"
    return ", ".join(str(d) for d in devices)


def out_of_memory(err: BaseException, batch_size: int, device: torch.device) -> OutOfMemory:
    """PyTorch's out-of-memory error as the course's OutOfMemory, naming the batch."""
    asked = re.search(r"Tried to allocate ([\d.]+ [KMGT]?i?B)", str(err))
    parts = [f"batch_size={batch_size} per device does not fit on {device}"]
    if asked:
        parts.append(f"PyTorch tried to allocate {asked.group(1)} more")
    if device.type == "cuda":
        try:
            free, total = torch.cuda.mem_get_info(device)
            parts.append(f"{free / 2**20:,.0f} MiB of {total / 2**20:,.0f} MiB were free")
        except Exception:  # the numbers are a comfort; the message must still come
            pass
    return OutOfMemory("; ".join(parts) + ". Try a smaller batch_size, or dtype='float16'.")
