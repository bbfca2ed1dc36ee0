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

# %%
from torch.utils.data import DataLoader
from gpu_course import torch as gc
from gpu_course.data.packed import check_roundtrip
from gpu_course.tracks.torch import io_data
from gpu_course.lessons import l09_input as lesson   # the photo folder and the disk test

# %% tags=["parameters"]
FOLDER = None            # your own image folder (e.g. ".../256_ObjectCategories"), or None: a generated one
SIZES = gc.sizes("09")   # GPU_COURSE_SMOKE=1 (what CI sets) makes every size small; override any: gc.sizes("09", epochs=3)

# %% [markdown]
# Unless `FOLDER` names your own, a folder shaped like Caltech-256 is written once: ten class
# folders of photos 200-500 px a side, `SIZES.images` of them. The network reads them at
# `SIZES.image_size` px: ResNet-20 where there is a GPU; on a CPU the tiny convnet, whose
# steps are cheap enough for the input pipeline to show.

# %%
cfg = gc.Experiment(name="io", data_dir=str(lesson.photo_folder(SIZES.images, FOLDER)),
                    model="tiny" if not gc.gpu_count() else "resnet20", num_workers=1, **SIZES)

# %% [markdown]
# ## How fast does the disk read?
# Before any loader: the disk under the photos. The profiling lecture says to check the I/O
# bandwidth first (a disk reads about 150 MB/s, NVMe about 3,000 MB/s). A scratch file is
# written, evicted from the page cache (only that file, with `posix_fadvise`) and read back
# in order and shuffled, in 1 MiB and in JPEG-sized 32 KiB blocks; then the photos
# themselves, sorted and shuffled.

# %%
reads = lesson.read_speeds(cfg.data_dir, SIZES.disk_test_mb)   # gpu_course/data/disk.py
gc.show(reads, lesson="09", chart=False)
gc.conclude("09", reads)

# %% [markdown]
# ## Rungs 1 and 2: one `DataLoader` worker, then several
# `__getitem__` opens one JPEG, decodes the whole photo, resizes it and augments it (pad-4
# crop, flip, normalise); the DataLoader runs it in `num_workers` processes, and that
# argument is all rung 2 changes.

# %%
loose_set, val_set = gc.load_datasets(cfg)   # data_format="loose": one photo decoded per sample
val_iter = DataLoader(val_set, batch_size=cfg.batch_size)
runs = [gc.train(cfg.replace(name=f"loose JPEGs, {n} worker(s)", num_workers=n), verbose=False,
                 train_iter=DataLoader(loose_set, cfg.batch_size, shuffle=True, drop_last=True,
                                       num_workers=n),                       # <- rung 2
                 val_iter=val_iter)
        for n in sorted({1, gc.workers()})]

# %% [markdown]
# ### What bounds rung 1
# Two mock components from the lecture: with `mock="trainer"` the loop only fetches batches
# (the input's ceiling: what one worker can deliver), with `mock="loader"` it trains on one
# batch served again and again (the model's ceiling). Ceilings bound a run and are no rungs:
# lesson 10's table shows them, without a speed-up.

# %%
ceilings = []
for mock in ("trainer", "loader"):   # fetch and drop; one batch forever
    loader = DataLoader(loose_set, cfg.batch_size, shuffle=True, drop_last=True, num_workers=1)
    ceilings.append(gc.train(cfg.replace(name=f"{runs[0].name}: mock {mock}", mock=mock,
                                         epochs=1, max_steps=SIZES.ceiling_steps),
                             train_iter=loader, val_iter=val_iter, verbose=False))
gc.show([runs[0], *ceilings], lesson="10", chart=False)
gc.conclude("10", [runs[0], *ceilings])

# %% [markdown]
# ## Rung 3: resize once, before training
# Every epoch resized every photo to the same small image. `prepare_data` does it once,
# in parallel processes, and keeps the small JPEGs; `__getitem__` then decodes a few
# kilobytes instead of a whole photo.

# %%
small = cfg.replace(name="pre-resized, 1 worker", data_format="preresized")   # <- rung 3
gc.prepare_data(small)                        # once, out of band: in parallel, timed
small_set, _ = gc.load_datasets(small)        # reads the small JPEGs
train_iter = DataLoader(small_set, cfg.batch_size, shuffle=True, drop_last=True, num_workers=1)
runs.append(gc.train(small, train_iter=train_iter, val_iter=val_iter, verbose=False))

# %% [markdown]
# ## Rung 4: one packed file, read sequentially
# Every image decoded and resized once and its pixels packed into one file: uint8
# [N, H, W, 3] from a page-aligned offset, then the labels, a CRC-32 per image and the source
# paths. The packer works in parallel; we check every record against its source (index,
# label, pixels). The file is memory-mapped: no decode, no file opens, only the augmentation.

# %%
packed = cfg.replace(name="packed file, 1 worker", data_format="packed")     # <- rung 4
pack = gc.prepare_data(packed).path           # train-<size>px-<hash>.pack, made in parallel
check_roundtrip(pack, io_data.folder_split(packed)[0])   # raises on a record unlike its source
packed_set, _ = gc.load_datasets(packed)      # np.memmap: read from disk as touched
train_iter = DataLoader(packed_set, cfg.batch_size, shuffle=True, drop_last=True, num_workers=1)
runs.append(gc.train(packed, train_iter=train_iter, val_iter=val_iter, verbose=False))

# %% [markdown]
# ## Rung 5: the whole dataset in memory (and on a GPU, in GPU memory)
# The packed file read into host memory in one sequential pass. With a GPU the images go to
# GPU memory once and a `GpuLoader` crops, flips and normalises whole batches there: no
# workers, no copies per step.

# %%
memory = cfg.replace(name="in memory, 1 worker", data_format="memory")        # <- rung 5
memory_set, _ = gc.load_datasets(memory)
train_iter = DataLoader(memory_set, cfg.batch_size, shuffle=True, drop_last=True, num_workers=1)
runs.append(gc.train(memory, train_iter=train_iter, val_iter=val_iter, verbose=False))
if gc.gpu_count():
    on_gpu = memory.replace(name="in GPU memory", data_on_gpu=True, num_workers=0)   # <- GpuLoader
    gpu_iter, gpu_val = gc.load_data(on_gpu)
    runs.append(gc.train(on_gpu, train_iter=gpu_iter, val_iter=gpu_val, verbose=False))

# %% [markdown]
# ## Every rung, and what limits the first
# The table sets each rung beside rung 1; the sentences judge each against the runs' noise and
# call a rung the fastest only if it beats all the others beyond it. `gpu_course.analyse.diagnose`
# (also `gpu-course diagnose RUN`) then reads rung 1 with its ceilings, names what holds it
# and the next rung; when that is rung 2's change (more workers), the two runs show whether
# it paid. The rung with the most samples/s is diagnosed last.

# %%
gc.show(runs, lesson="09")
gc.conclude("09", runs)   # the sentences, checked against the table: gpu_course/lessons/l09_input.py

# %% [markdown]
# ## Deeper: the page cache, and the order of the reads
# Rung 4's file was read from the page cache: the operating system keeps what a program
# read (or wrote: the packer just did) in spare memory. A data set larger than that memory
# is never found there when an epoch comes back to it, and every epoch reads the disk.
# Shrinking the cache needs root; what we can do is drop *this file's* pages before every
# epoch (`posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)`, `page_cache="drop"`): each epoch then
# reads the disk as a file larger than memory would, and the next run (`"keep"`) finds it
# warm. The sampler measures, at each epoch's start, how much of the file the cache still
# holds (`mincore`, in the run's notes and the table): a file system that ignores the
# advice (tmpfs keeps files in memory) shows there, and the lesson then calls nothing cold.

# %%
deep = packed.replace(threads=SIZES.torch_threads)   # the model's threads, beside one worker
cache_runs = []
for cache in lesson.PAGE_CACHES:                     # "drop" (cold every epoch), then "keep"
    run_cfg = deep.replace(name=f"packed, random order, page cache: {cache}", page_cache=cache)
    sampler = io_data.OrderSampler(packed_set, run_cfg, pack)          # <- drops before each epoch
    train_iter = DataLoader(packed_set, cfg.batch_size, sampler=sampler, drop_last=True,
                            num_workers=1)                              # <- sampler=
    cache_runs.append(gc.train(run_cfg, train_iter=train_iter, val_iter=val_iter, verbose=False))
gc.show(cache_runs, lesson="09", chart=False)
gc.conclude("09", cache_runs)

# %% [markdown]
# In a packed file the order of the samples is the order of the reads on the disk. A shuffle
# reads all over the file; file order reads it straight through, and the disk's read-ahead
# fetches the next records before they are asked for, but every epoch then sees the same
# batches. FFCV's `QUASI_RANDOM` order sits between: windows of neighbouring records (1 MiB
# of the file each, at least a batch) in a random order, shuffled inside, so the reads stay
# in one stretch of the file at a time. The order matters where the reads go to the disk, so
# each order reads its file cold (`page_cache="drop"`; the cold run above is the random
# order's). The order is a field of the run (`sample_order`), recorded with it; speed and
# accuracy are both judged against noise.

# %%
order_runs = [cache_runs[0]]                         # random order, cold
for order in lesson.ORDERS[1:]:                      # quasi-random, sequential
    run_cfg = deep.replace(name=f"packed, {order} order, page cache: drop",
                           sample_order=order, page_cache="drop")                 # <- the order
    train_iter = DataLoader(packed_set, cfg.batch_size, drop_last=True, num_workers=1,
                            sampler=io_data.OrderSampler(packed_set, run_cfg, pack))
    order_runs.append(gc.train(run_cfg, train_iter=train_iter, val_iter=val_iter, verbose=False))
gc.show(order_runs, lesson="09", chart=False)
gc.conclude("09", order_runs)

# %% [markdown]
# ## Exercise 09.1: another format, and the data wait
# Below, rung 1 again (loose JPEGs, one worker) on `SIZES.exercise_size` images, then the
# same job reading the format you set at the line marked `# >>>`: `"preresized"`,
# `"packed"` or `"memory"` (made once, out of band, by `gc.prepare_data`). **Before
# running**, write your guess of the share of each step spent waiting for a batch, against
# loose JPEGs: `"more"`, `"less"` or `"same"`. The check reads it against the blocks of each
# run's steady steps and adds what happened to samples/s, which need not follow. After
# trying, `gc.solution("09.1")` shows one way.

# %% tags=["exercise"]
ex = gc.Experiment(name="exercise", data_dir=str(lesson.photo_folder(SIZES.images, FOLDER)), num_workers=1,
                   threads=SIZES.torch_threads,
                   model="resnet20" if gc.gpu_count() else "tiny",
                   **SIZES.replace(train_size=SIZES.exercise_size, batch_size=SIZES.exercise_batch))
fmt = "loose"                # >>> another data format: "preresized", "packed" or "memory"
guess = None                 # >>> written before running: data wait "more", "less" or "same" than loose JPEGs
gc.prepare_data(ex.replace(data_format=fmt))   # once, out of band (nothing to make for loose JPEGs)
tried = [gc.train(ex.replace(name=f"exercise: {f}", data_format=f), verbose=False)   # <- the format
         for f in dict.fromkeys(("loose", fmt))]

# %% tags=["check"]
gc.check("09.1", tried, guess)
