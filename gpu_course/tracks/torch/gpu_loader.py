"""The last rung, as airbench does: the whole dataset on the GPU, each batch cut from it
(crop and flip as one gather, a cast, a normalisation); the epoch's random numbers come from
a CPU generator seeded by (seed, epoch), in one copy per epoch."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from ... import data as course_data
from ...config import Experiment

PAD = 4   # pixels of zero padding around a training image, for its random crop


@dataclass(frozen=True)
class Batches:
    """What a GpuLoader cuts: train=True a new random order each epoch, crops and flips,
    the last short batch dropped; rank/world_size: this process's share under DDP."""

    batch_size: int
    train: bool = True
    augment: str = "standard"
    dtype: torch.dtype = torch.float32
    channels_last: bool = False
    seed: int = 0
    rank: int = 0
    world_size: int = 1

    def __post_init__(self):
        if self.augment not in ("none", "standard", "heavy"):
            raise ValueError(f"augment={self.augment!r} is not allowed; allowed: none, standard, heavy")
        if self.batch_size < 1:
            raise ValueError(f"batch_size={self.batch_size!r} must be >= 1")


class GpuLoader:
    """Batches of (images, labels) cut from uint8 [N, H, W, 3] images that live on `device`."""

    def __init__(self, images, labels, batches: Batches, device="cpu"):
        self.device = torch.device(device)
        self.batch_size, self.train, self.dtype = batches.batch_size, batches.train, batches.dtype
        self.channels_last, self.seed = batches.channels_last, batches.seed
        self.rank, self.world_size = batches.rank, batches.world_size
        # "heavy" is a CPU-loader lesson: here it crops and flips as "standard" does
        self.augmented = batches.train and batches.augment != "none"
        self.pad = PAD if self.augmented else 0
        images = _tensor(images)
        if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != torch.uint8:
            raise ValueError(f"images must be uint8 [N, H, W, 3], got {images.dtype} {list(images.shape)}")
        self.size = images.shape[1:3]
        # one copy to the device for the whole run, padded once, kept NHWC: a batch cut
        # from it and permuted to NCHW is channels_last as it is, with no extra copy
        self.images = F.pad(images.to(self.device), [0, 0] + [self.pad] * 4)
        self.labels = _tensor(labels).to(self.device, torch.int64)
        mean = torch.tensor(course_data.CIFAR_MEAN, device=self.device).view(1, 3, 1, 1)
        std = torch.tensor(course_data.CIFAR_STD, device=self.device).view(1, 3, 1, 1)
        self.scale, self.offset = 1 / (255 * std), -mean / std  # (x/255 - mean)/std: one FMA
        self._rows = torch.arange(self.size[0], device=self.device)
        self._cols = torch.arange(self.size[1], device=self.device)
        self._flip_shift = self.size[1] - 1 - 2 * self._cols  # column c flipped is c + this
        self._channels = torch.arange(3, device=self.device)
        self.epoch = -1

    def __len__(self) -> int:
        n = len(self.labels)
        if self.train:
            return n // self.world_size // self.batch_size
        return -(-len(range(self.rank, n, self.world_size)) // self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        """Use the random numbers of `epoch` in the next iteration."""
        self.epoch = epoch - 1

    def plan(self, epoch: int) -> dict:
        """The epoch's sample order and, per position, crop offsets and flips (CPU tensors)."""
        n, pad = len(self.labels), self.pad
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
        if not self.train:
            order = torch.arange(self.rank, n, self.world_size)
            zeros = torch.zeros(len(order), dtype=torch.int64)
            return {"order": order, "dy": zeros, "dx": zeros, "flip": zeros.bool()}
        per_rank = n // self.world_size  # every rank the same number of steps
        order = torch.randperm(n, generator=g)[self.rank * per_rank:(self.rank + 1) * per_rank]
        offsets = torch.randint(0, 2 * pad + 1, (2, per_rank), generator=g)
        flip = torch.rand(per_rank, generator=g) < 0.5 if self.augmented \
            else torch.zeros(per_rank, dtype=torch.bool)
        return {"order": order, "dy": offsets[0], "dx": offsets[1], "flip": flip}

    def device_plan(self, epoch: int, plan: dict | None = None) -> torch.Tensor:
        """The epoch's plan on the device: int64 [5, n] (sample, row, column, flip, label)."""
        plan = self.plan(epoch) if plan is None else plan
        plan = torch.stack([plan["order"], plan["dy"], plan["dx"], plan["flip"].long()]).to(
            self.device, non_blocking=True)
        return torch.cat([plan, self.labels[plan[0]][None]])

    def cut(self, columns: torch.Tensor):
        """(images, labels) for the plan columns [5, batch]: four operators, no host read."""
        idx, dy, dx, flip, labels = columns.unbind()
        # output row r is padded row dy + r; column c is dx + c, or dx + (w - 1 - c) flipped
        y = dy[:, None] + self._rows
        x = torch.addcmul(dx[:, None] + self._cols, flip[:, None], self._flip_shift)
        if self.channels_last:  # [B, H, W, C] gathered, seen as NCHW: channels_last
            batch = self.images[idx[:, None, None], y[:, :, None], x[:, None, :]].permute(0, 3, 1, 2)
        else:  # [B, C, H, W] gathered directly
            batch = self.images[idx[:, None, None, None], y[:, None, :, None],
                                x[:, None, None, :], self._channels[None, :, None, None]]
        batch = torch.addcmul(self.offset, batch, self.scale)  # uint8 in, float32 out
        return batch.to(self.dtype), labels

    def __iter__(self):
        self.epoch += 1
        plan = self.device_plan(self.epoch)  # one copy per epoch
        for b in range(len(self)):
            yield self.cut(plan[:, b * self.batch_size:(b + 1) * self.batch_size])


def _tensor(array) -> torch.Tensor:
    return array if isinstance(array, torch.Tensor) else torch.as_tensor(np.asarray(array))


def gpu_loaders(cfg: Experiment, device, rank: int = 0, world_size: int = 1,
                dtype: torch.dtype = torch.float32) -> tuple[GpuLoader, GpuLoader]:
    """(train_iter, val_iter) over cfg's dataset, both resident on `device`."""
    if cfg.dataset == "folder":  # an image folder, decoded once into packed arrays
        from ...data.packed import load_folder
        arrays = load_folder(cfg.data_dir, cfg.image_size, cfg.train_size, cfg.test_size,
                             cfg.seed)
    else:
        arrays = course_data.load(cfg.dataset, root=cfg.data_dir, train_size=cfg.train_size,
                                  test_size=cfg.test_size, seed=cfg.seed)
    batches = Batches(cfg.batch_size, augment=cfg.augment, dtype=dtype,
                      channels_last=cfg.channels_last, seed=cfg.seed)
    # validation runs on rank 0 only (see loop.evaluate), over every image
    return (GpuLoader(arrays.train_x, arrays.train_y,
                      replace(batches, rank=rank, world_size=world_size), device),
            GpuLoader(arrays.test_x, arrays.test_y, replace(batches, train=False), device))
