# %% [markdown]
# # 9. The input pipeline: pre-processing and packed formats
#
# **What this lesson measures.** Real photos are not CIFAR-10 arrays: every sample is a
# JPEG of a few hundred pixels that must be opened, decoded and resized before the
# augmentation even starts. On a folder shaped like Caltech-256 we climb the I/O ladder,
# one change per rung, with the same model, monitor, timer and run records:
# (1) loose JPEGs decoded, resized and augmented per sample by one worker; (2) more workers;
# (3) the images resized once, out of band, and stored small; (4) packed into one RecordIO
# file read sequentially; (5) the whole dataset in memory. We also measure the disk itself:
# sequential against random reads.
#
# **The numbers to compare with.** The AWS Caltech-256 sample (ResNet-50 on one V100,
# ml.p3.2xlarge): 1 worker ~100 images/s, 260 s per epoch, GPU peaking at 50 %; 7 workers
# ~300 images/s, 96 s per epoch, GPU at about 95 %. The profiling lecture: a disk reads
# ~150 MB/s, NVMe ~3,000 MB/s. The talk "The Steady State" (a V100 in 2019): 1 worker
# 306 samples/s, 29 workers 663. Those came from 2019 machines; your numbers come from yours.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
from mxnet import gluon
from gpu_course import gluon as gc
from gpu_course.tracks.gluon import io_data, recordio
from gpu_course.lessons import l09_input as lesson   # the photo folder and the disk test

# %% tags=["parameters"]
SIZES = gc.sizes("09")   # full size; small in CI (GPU_COURSE_SMOKE=1). Change any: gc.sizes("09", images=30_000)
FOLDER = None            # None: generate a Caltech-256-shaped folder; or e.g. ".../256_ObjectCategories"

# %% [markdown]
# The photos: `SIZES.images` JPEGs of 200-500 px a side in ten class folders (generated once,
# or your own `FOLDER`), trained at `SIZES.image_size` px. On a GPU the network is ResNet-20;
# on a CPU the tiny convnet, so that the input has a chance to be the slow part.

# %%
root = lesson.photo_folder(SIZES.images, FOLDER)
cfg = gc.Experiment(name="io", data_dir=str(root), num_workers=1,
                    model="resnet20" if gc.gpu_count() else "tiny", **SIZES)

# %% [markdown]
# ## The disk: sequential against random reads
# The lecture's rule of thumb: check your I/O bandwidth; about 150 MB/s for a disk, 3,000 MB/s
# for NVMe. We write a scratch file, drop it from the page cache (`posix_fadvise`, this file
# only) and read it back in file order and in a random order, in 1 MiB blocks and in 32 KiB
# blocks (the size of one JPEG), then read the dataset's own JPEGs in sorted and in random order.

# %%
reads = lesson.read_speeds(root, SIZES.disk_test_mb)   # gpu_course/data/disk.py
gc.show(reads, lesson="09", chart=False)
gc.conclude("09", reads)

# %% [markdown]
# ## Rungs 1 and 2: loose JPEGs, one worker, then more
# Each sample opens a JPEG, decodes all of it, resizes it to the training size and augments
# it (pad-4 crop, flip, normalise), inside the DataLoader's worker processes. The one change
# of rung 2 is `num_workers`.

# %%
loose_set, val_set = gc.load_datasets(cfg)        # data_format="loose": decoded per sample, in the workers
val_iter = gluon.data.DataLoader(val_set, batch_size=cfg.batch_size)
runs = []
for n in sorted({1, gc.workers()}):
    train_iter = gluon.data.DataLoader(loose_set, batch_size=cfg.batch_size, shuffle=True,
                                       last_batch="discard", num_workers=n)   # <- rung 2
    runs.append(gc.train(cfg.replace(name=f"loose JPEGs, {n} worker(s)", num_workers=n),
                         train_iter=train_iter, val_iter=val_iter, verbose=False))

# %% [markdown]
# ### Rung 1's two ceilings
# The lecture's mock components, one flag each: `mock="trainer"` fetches batches and drops
# them (how fast can one worker deliver?), `mock="loader"` trains on one batch kept in place
# (how fast can the model go?). They bound rung 1; they are not rungs. Lesson 10 reads them.

# %%
one_worker = gluon.data.DataLoader(loose_set, batch_size=cfg.batch_size, shuffle=True,
                                   last_batch="discard", num_workers=1)
ceilings = [gc.train(cfg.replace(name=f"{runs[0].name}: mock {mock}", mock=mock, epochs=1,
                                 max_steps=SIZES.ceiling_steps),
                     train_iter=one_worker, val_iter=val_iter, verbose=False)
            for mock in ("trainer", "loader")]
gc.show([runs[0], *ceilings], lesson="10", chart=False)   # ceilings: lesson 10's table, no speed-up
gc.conclude("10", [runs[0], *ceilings])

# %% [markdown]
# ## Rung 3: pre-process out of band
# Resizing gives the same result every epoch, so do it once, before training: every image is
# decoded, resized to the training size and stored as a small JPEG, in parallel processes.
# Training then decodes a few kilobytes per sample instead of a full photo.

# %%
small = cfg.replace(name="pre-resized, 1 worker", data_format="preresized")   # <- rung 3
gc.prepare_data(small)                             # once, out of band: in parallel, timed
small_set, _ = gc.load_datasets(small)             # reads the small JPEGs
train_iter = gluon.data.DataLoader(small_set, batch_size=cfg.batch_size, shuffle=True,
                                   last_batch="discard", num_workers=1)
runs.append(gc.train(small, train_iter=train_iter, val_iter=val_iter, verbose=False))

# %% [markdown]
# ## Rung 4: one packed file, read sequentially (RecordIO)
# MXNet's own packed format: `MXIndexedRecordIO` writes every pre-resized image as a record
# of one `.rec` file, with an `.idx` of byte offsets for random access. We pack, check every
# record against its source (index, label and bytes), and read it back two ways: an
# `ImageRecordDataset` in the DataLoader's workers, and MXNet's C++ `ImageRecordIter`, which
# decodes and augments in its own threads.

# %%
packed = cfg.replace(name="RecordIO, 1 worker", data_format="packed")         # <- rung 4
rec = gc.prepare_data(packed).path                 # train-<size>px-<hash>.rec + .idx
recordio.check_recordio(rec, io_data.folder_split(packed)[0])   # raises on a record unlike its source
rec_set, _ = gc.load_datasets(packed)              # a gluon ImageRecordDataset over the .rec
train_iter = gluon.data.DataLoader(rec_set, batch_size=cfg.batch_size, shuffle=True,
                                   last_batch="discard", num_workers=1)
runs.append(gc.train(packed, train_iter=train_iter, val_iter=val_iter, verbose=False))
rec_iter = recordio.RecordIter(rec, batch_size=cfg.batch_size, size=cfg.image_size, threads=1,
                               seed=cfg.seed)      # <- MXNet's C++ ImageRecordIter
runs.append(gc.train(packed.replace(name="RecordIO, C++ iterator (1 thread)"),
                     train_iter=rec_iter, val_iter=val_iter, verbose=False))

# %% [markdown]
# ## Rung 5: the whole dataset in memory
# Decoded once into one array in host memory: each sample is a slice, only the augmentation
# is left per sample.

# %%
memory = cfg.replace(name="in memory, 1 worker", data_format="memory")        # <- rung 5
memory_set, _ = gc.load_datasets(memory)
train_iter = gluon.data.DataLoader(memory_set, batch_size=cfg.batch_size, shuffle=True,
                                   last_batch="discard", num_workers=1)
runs.append(gc.train(memory, train_iter=train_iter, val_iter=val_iter, verbose=False))

# %% [markdown]
# ## The ladder, and a diagnosis
# Each rung against rung 1, judged against the runs' noise: a rung is named the fastest only
# when it beats every other beyond noise. Then `gpu_course.analyse.diagnose` reads rung 1's record and
# its two ceilings, says what limits it and names the next rung (`gpu-course diagnose RUN`
# prints the same); where that rung ran here (more workers: rung 2), the two runs say whether
# it helped. Last, the diagnosis of the rung with the most samples/s.

# %%
gc.show(runs, lesson="09")
gc.conclude("09", runs)   # the sentences, checked against the table: gpu_course/lessons/l09_input.py

# %% [markdown]
# ## Deeper: the page cache, and the order of the reads
# Rung 4's RecordIO file was read from the page cache: the operating system keeps what a
# program read (or wrote: the packer just did) in spare memory. A data set larger than that
# memory is never found there when an epoch comes back to it, and every epoch reads the disk.
# Shrinking the cache needs root; what we can do is drop *this file's* pages before every
# epoch (`posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)`, `page_cache="drop"`): each epoch then
# reads the disk as a file larger than memory would, and the next run (`"keep"`) finds it
# warm. The sampler measures, at each epoch's start, how much of the file the cache still
# holds (`mincore`, in the run's notes and the table): a file system that ignores the
# advice (tmpfs keeps files in memory) shows there, and the lesson then calls nothing cold.

# %%
cache_runs = []
for cache in lesson.PAGE_CACHES:                     # "drop" (cold every epoch), then "keep"
    run_cfg = packed.replace(name=f"RecordIO, random order, page cache: {cache}", page_cache=cache)
    sampler = io_data.OrderSampler(rec_set, run_cfg, rec)               # <- drops before each epoch
    train_iter = gluon.data.DataLoader(rec_set, batch_size=cfg.batch_size, sampler=sampler,
                                       last_batch="discard", num_workers=1)   # <- sampler=
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
    run_cfg = packed.replace(name=f"RecordIO, {order} order, page cache: drop",
                             sample_order=order, page_cache="drop")               # <- the order
    train_iter = gluon.data.DataLoader(rec_set, batch_size=cfg.batch_size, last_batch="discard",
                                       sampler=io_data.OrderSampler(rec_set, run_cfg, rec),
                                       num_workers=1)
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
                   model="resnet20" if gc.gpu_count() else "tiny",
                   **SIZES.replace(train_size=SIZES.exercise_size, batch_size=SIZES.exercise_batch))
fmt = "loose"                # >>> another data format: "preresized", "packed" or "memory"
guess = None                 # >>> written before running: data wait "more", "less" or "same" than loose JPEGs
gc.prepare_data(ex.replace(data_format=fmt))   # once, out of band (nothing to make for loose JPEGs)
tried = [gc.train(ex.replace(name=f"exercise: {f}", data_format=f), verbose=False)   # <- the format
         for f in dict.fromkeys(("loose", fmt))]

# %% tags=["check"]
gc.check("09.1", tried, guess)
