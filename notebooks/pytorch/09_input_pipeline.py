# %% [markdown]
# # 9. The input pipeline: pre-processing and packed formats
#
# **What this lesson measures.** Real photos are not CIFAR-10 arrays: every sample is a
# JPEG of a few hundred pixels that must be opened, decoded and resized before the
# augmentation even starts. On a folder shaped like Caltech-256 we climb the I/O ladder,
# one change per rung, with the same model, monitor, timer and run records:
# (1) loose JPEGs decoded, resized and augmented per sample by one worker; (2) more workers;
# (3) the images resized once, out of band, and stored small; (4) packed into one array
# file read sequentially; (5) the whole dataset in memory, and on a GPU, in GPU memory with
# the augmentation there too. We also measure the disk itself: sequential against random reads.
#
# **The numbers to compare with.** The AWS Caltech-256 sample (PyTorch, ResNet-50 on one
# V100, ml.p3.2xlarge): 1 worker ~100 images/s, 260 s per epoch, GPU peaking at 50 %;
# 7 workers ~300 images/s, 96 s per epoch, GPU at about 95 %. The profiling lecture: a disk
# reads ~150 MB/s, NVMe ~3,000 MB/s. The talk "The Steady State" (a V100 in 2019): 1 worker
# 306 samples/s, 29 workers 663. Those came from 2019 machines; your numbers come from yours.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
FOLDER = None                         # None: generate a Caltech-256-shaped folder; or e.g. ".../256_ObjectCategories"
IMAGES = 500 if SMOKE else 3000       # JPEGs to generate (200-500 px a side)
IMAGE_SIZE = 32 if SMOKE else 64      # training size, pixels a side
TRAIN_SIZE = 400 if SMOKE else 2400   # smoke: 25 steps a run, enough for diagnose to rule
BATCH = 16 if SMOKE else 64           # images per step (smoke: small, so that 25 steps stay quick)
TEST_SIZE = 40 if SMOKE else 500
EPOCHS = 1 if SMOKE else 2
MODEL = None                          # None: resnet20 on a GPU, the tiny net on a CPU
DISK_TEST_MB = 32 if SMOKE else 512   # size of the scratch file for the disk test
CEILING_STEPS = 24 if SMOKE else 100  # steps of each ceiling run (20+ steady: enough to bound)

# %%
import numpy as np
from torch.utils.data import DataLoader
from gpu_course.tracks import torch as gc
from gpu_course.data import disk, folder, packed
from gpu_course.tracks.torch import io_data
from gpu_course.analyse.diagnose import advice_outcome, diagnose, explain

root = pathlib.Path(FOLDER) if FOLDER else folder.generate_folder(
    folder.default_folder().with_name(f"caltech256-like-{IMAGES}"), per_class=IMAGES // 10)
index = folder.scan_folder(root)
model = MODEL or ("resnet20" if gc.gpu_count() else "tiny")
cfg = gc.Experiment(name="io", engine="pytorch", dataset="folder", data_dir=str(root),
                    image_size=IMAGE_SIZE, train_size=TRAIN_SIZE, test_size=TEST_SIZE,
                    epochs=EPOCHS, model=model, batch_size=BATCH, num_gpus=1,
                    warmup_steps=2 if SMOKE else 5, monitor_interval=0.2 if SMOKE else 0.5)
train_index, val_index = io_data.folder_split(cfg)
sizes = [index.path(i).stat().st_size for i in range(0, len(index), max(1, len(index) // 200))]
print(f"{len(index):,} images in {len(index.classes)} class folders under {root}; "
      f"{np.mean(sizes) / 1024:,.0f} KB per JPEG on average. Training on {len(train_index):,} "
      f"of them at {IMAGE_SIZE} px with {model}; {os.cpu_count()} CPU cores, {gc.gpu_count()} GPU(s).")

# %% [markdown]
# ## The disk: sequential against random reads
# The lecture's rule of thumb: check your I/O bandwidth; about 150 MB/s for a disk, 3,000 MB/s
# for NVMe. We write a scratch file, drop it from the page cache (`posix_fadvise`, this file
# only) and read it back in file order and in a random order, in 1 MiB blocks and in 32 KiB
# blocks (the size of one JPEG), then read the dataset's own JPEGs in sorted and in random order.

# %%
scratch = packed.prepared_dir(root) / "read-test.bin"
scratch.parent.mkdir(parents=True, exist_ok=True)
scratch.write_bytes(os.urandom(DISK_TEST_MB << 20))
reads = [disk.read_bandwidth(scratch, "sequential"),
         disk.read_bandwidth(scratch, "random"),
         disk.read_bandwidth(scratch, "random", block_size=32 << 10),
         disk.read_bandwidth(scratch, "sequential", cold=False)]
jpegs = [index.path(i) for i in range(min(len(index), 1000))]
reads += [disk.read_files(jpegs, "sequential"), disk.read_files(jpegs, "random")]
scratch.unlink()
for r in reads:
    print(r)
seq, small = reads[0].mb_per_s, reads[2].mb_per_s
print(f"\nSequential reads: {seq:,.0f} MB/s, {seq / 150:,.1f}x the lecture's disk and "
      f"{seq / 3000:,.2f}x its NVMe. Random 32 KiB reads: {small:,.0f} MB/s "
      f"({small / seq:.0%} of sequential).")

# %% [markdown]
# ## Rungs 1 and 2: loose JPEGs, one worker, then more
# Each sample opens a JPEG, decodes all of it, resizes it to the training size and augments
# it (pad-4 crop, flip, normalise), inside the DataLoader's worker processes. The one change
# of rung 2 is `num_workers`.

# %%
recommended = max(2, os.cpu_count() - 3)   # the talk: cpu_count() - 3, at least 2
runs = []
loose_set, val_set = io_data.io_datasets(cfg, "loose")   # decodes per sample, in the workers
val_iter = DataLoader(val_set, batch_size=BATCH)
for n in sorted({1, recommended}):
    train_iter = DataLoader(loose_set, batch_size=BATCH, shuffle=True, drop_last=True,
                            num_workers=n)   # <- rung 2
    runs.append(gc.train(cfg.replace(name=f"loose JPEGs, {n} worker(s)", num_workers=n),
                         train_iter=train_iter, val_iter=val_iter, verbose=False))
    print(runs[-1].name, f"{gc.report.samples_per_sec(runs[-1]):,.0f} samples/s")

# %% [markdown]
# ### Rung 1's two ceilings
# The lecture's mock components, one flag each: `mock="trainer"` fetches batches and drops
# them (how fast can one worker deliver?), `mock="loader"` trains on one batch kept in place
# (how fast can the model go?). The diagnosis at the end reads them.

# %%
one_worker = DataLoader(loose_set, batch_size=BATCH, shuffle=True, drop_last=True, num_workers=1)
ceilings = {mock: gc.train(cfg.replace(name=f"{runs[0].name}: mock {mock}", num_workers=1,
                                       mock=mock, epochs=1, max_steps=CEILING_STEPS),
                           train_iter=one_worker, val_iter=val_iter, verbose=False)
            for mock in ("trainer", "loader")}
feed, need = (gc.report.samples_per_sec(ceilings[m]) for m in ("trainer", "loader"))
print(f"One worker alone delivers {feed:,.0f} samples/s; the model alone consumes {need:,.0f} "
      f"samples/s; together they reached {gc.report.samples_per_sec(runs[0]):,.0f}.")

# %% [markdown]
# ## Rung 3: pre-process out of band
# Resizing gives the same result every epoch, so do it once, before training: every image is
# decoded, resized to the training size and stored as a small JPEG, in parallel processes.
# Training then decodes a few kilobytes per sample instead of a full photo.

# %%
print(packed.ensure_preresized(train_index, IMAGE_SIZE))   # once, out of band: parallel, with progress
small_set, _ = io_data.io_datasets(cfg, "preresized")      # reads the small JPEGs
train_iter = DataLoader(small_set, batch_size=BATCH, shuffle=True, drop_last=True, num_workers=1)
runs.append(gc.train(cfg.replace(name="pre-resized, 1 worker"), train_iter=train_iter,
                     val_iter=val_iter, verbose=False))

# %% [markdown]
# ## Rung 4: one packed file, read sequentially
# Every image decoded and resized once and its pixels packed into one file: uint8
# [N, H, W, 3] from a page-aligned offset, then the labels, a CRC-32 per image and the source
# paths. The packer works in parallel; we check every record against its source (index,
# label, pixels). The file is memory-mapped: no decode, no file opens, only the augmentation.

# %%
pack = packed.ensure_packed(train_index, IMAGE_SIZE)
print(f"{pack.name}: {packed.check_roundtrip(pack, train_index):,} records match their source "
      "images (index, label and pixels)")
images = packed.PackedArray(pack)   # np.memmap: read from disk as touched
packed_set = gc.ImageDataset(images.images, images.labels, cfg.augment, cfg.seed)   # <- rung 4
train_iter = DataLoader(packed_set, batch_size=BATCH, shuffle=True, drop_last=True, num_workers=1)
runs.append(gc.train(cfg.replace(name="packed file, 1 worker"), train_iter=train_iter,
                     val_iter=val_iter, verbose=False))

# %% [markdown]
# ## Rung 5: the whole dataset in memory (and on a GPU, in GPU memory)
# `images.load()` reads the packed file into host memory in one sequential pass. With a GPU
# the images go to GPU memory once and a `GpuLoader` crops, flips and normalises whole
# batches there: no workers, no copies per step.

# %%
memory_set = gc.ImageDataset(images.load(), images.labels, cfg.augment, cfg.seed)
train_iter = DataLoader(memory_set, batch_size=BATCH, shuffle=True, drop_last=True, num_workers=1)
runs.append(gc.train(cfg.replace(name="in memory, 1 worker"), train_iter=train_iter,
                     val_iter=val_iter, verbose=False))
if gc.gpu_count():
    gpu_iter, gpu_val = io_data.io_loaders(cfg, "gpu")
    runs.append(gc.train(cfg.replace(name="in GPU memory", num_workers=0), train_iter=gpu_iter,
                         val_iter=gpu_val, verbose=False))
else:
    print("No GPU here: the GPU-memory rung needs one (lesson 8 and the ladder run it there).")

# %%
gc.plots.ladder(runs)

# %%
table = gc.report.ladder_table(runs)
gc.tables.show(table)

# %%
say = gc.closing.Closing(table, runs)   # prints a line only when its numbers are the table's
best = int(table["samples_per_sec"].idxmax())
say(f"Loose JPEGs with one worker: {say.cell(0, 'samples_per_sec')} samples/s, waiting for data "
    f"{say.cell(0, 'data_wait_share')} of its steady step time. Each rung against it:")
for i, r in enumerate(runs[1:], start=1):
    say(f"  {r.name}: {say.compare(0, i)}")
say(f"Fastest: {runs[best].name!r}, waiting for data {say.cell(best, 'data_wait_share')} of its step time.")
if not gc.gpu_count():
    say(f"No GPU here: the {model} net computes on the same {os.cpu_count()} cores that decode, so "
        "a cheaper input pays only while the input is the slow part (the diagnosis below says "
        "which); on a GPU the computation moves off the CPU.")

# %% [markdown]
# ## Diagnosis
# `gpu_course.analyse.diagnose` reads a run record and says what limits it, with the numbers, and
# names the next rung (`gpu-course diagnose RUN` prints the same). It finds rung 1's two
# ceilings next to it in the runs folder. Where its advice is a rung this lesson already
# ran (more workers: rung 2), the two runs say whether it helped here, judged against
# their noise. Then the best rung:

# %%
rung1 = diagnose(runs[0], data_format="loose")
print(rung1)
applied = [r for r in runs[1:] if r.name.startswith("loose JPEGs")]   # rung 2: more workers
if rung1.next_rung == "workers" and applied:
    print(advice_outcome(rung1, runs[0], applied[0]))
print()
best_run = runs[int(table["samples_per_sec"].idxmax())]
formats = {"pre-resized": "preresized", "packed": "packed", "memory": "memory"}
print(explain(best_run, search=False,  # rung 1's ceilings do not apply to another format
              data_format=next((f for k, f in formats.items() if k in best_run.name), "loose")))
