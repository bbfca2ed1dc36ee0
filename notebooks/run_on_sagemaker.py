# %% [markdown]
# # Running the course on SageMaker
#
# **What this notebook does.** It runs one experiment of the course as an Amazon SageMaker
# training job: the same `Experiment`, the same training loop and the same run record as
# on your own machine, on a GPU you rent by the second. The record comes back and is
# plotted beside your local runs, so "my laptop" and "a V100 in the cloud" compare on
# one chart.
#
# **The numbers to compare with.** AWS's I/O sample ran its PyTorch job on an
# `ml.p3.2xlarge` (one V100): with **1** DataLoader worker it trained at about **100
# images/s** with the GPU peaking at **50 %**; with **7** workers, about **300 images/s**
# at **~95 %**. The talk ("The Steady State", a V100 in 2019) went from **306 samples/s**
# (naive) to **663** (29 workers) and **941** (hybridized) on one GPU. Those came from a
# V100 years ago; the numbers below come from the machines this notebook runs on.
#
# **Without AWS credentials** (CI, a laptop) the notebook prints the full job
# specification and stops there: nothing pretends a job ran.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %% tags=["parameters"]
import os
from gpu_course.config import smoke_mode
SMOKE = smoke_mode()   # GPU_COURSE_SMOKE=1 (CI sets it): tiny sizes; CPU times in notebooks/SMOKE_TIMES.md
INSTANCE_TYPE = "ml.p3.2xlarge"      # the talk's V100; see the table below
INSTANCE_COUNT = 1                   # > 1 uses the framework's distribution option
ROLE = None                          # None: this notebook instance's execution role
DATASET = "synthetic"                # "cifar10" where the real data set is in data/
TRAIN_SIZE = 512 if SMOKE else 50_000
TEST_SIZE = 256 if SMOKE else 10_000
EPOCHS = 1 if SMOKE else 3
MODEL = "tiny" if SMOKE else "resnet20"
NUM_WORKERS = 1 if SMOKE else 7      # the I/O sample's fix: 1 -> 7 workers

# %% [markdown]
# ## The instance
# A training job names an instance type. The ones the course knows, with what each is good
# for. MXNet 1.9 (the Gluon track) has machine code up to the A10G's sm_86, so it cannot use
# Hopper instances (`ml.p5`); the PyTorch track runs everywhere.

# %%
import pandas as pd
from gpu_course.sagemaker import launch as sm
from gpu_course.show import tables

tables.show(pd.DataFrame([{"instance": name, "GPUs": i.gpus, "GPU": i.gpu, "why": i.why}
                          for name, i in sm.INSTANCES.items()]))

# %% [markdown]
# ## The experiment
# The job trains the track whose framework this kernel has (the same code runs in AWS's
# MXNet 1.9.0 or PyTorch container). Every field of the `Experiment` becomes a
# hyperparameter; the entry script parses them back with the same checks as everywhere
# else in the course.

# %%
import importlib.util
from gpu_course.config import Experiment

ENGINE = "gluon" if importlib.util.find_spec("mxnet") else "pytorch"
cfg = Experiment(name=f"sagemaker-workers-{NUM_WORKERS}", engine=ENGINE, dataset=DATASET,
                 train_size=TRAIN_SIZE, test_size=TEST_SIZE, epochs=EPOCHS, model=MODEL,
                 batch_size=64, num_workers=NUM_WORKERS, warmup_steps=2 if SMOKE else 5,
                 monitor_interval=0.2 if SMOKE else 0.5)
sm.hyperparameters(cfg)

# %% [markdown]
# ## The job specification
# Image, instance, hyperparameters, the training channel (the dataset folder, uploaded to
# S3 at launch) and the metric definitions: regular expressions SageMaker applies to the
# job's log to chart samples/s, epoch time, data-wait share, GPU utilisation and accuracy.

# %%
spec = sm.job_spec(cfg, INSTANCE_TYPE, INSTANCE_COUNT, role=ROLE)
print(sm.format_spec(spec))

# %% [markdown]
# ## The entry script, here
# `gpu_course/sagemaker/entry.py` is what the container runs. It reads everything from
# SageMaker's environment variables (`SM_CHANNEL_TRAINING`, `SM_MODEL_DIR`,
# `SM_OUTPUT_DATA_DIR`, `SM_NUM_GPUS`), so pointing them at local folders runs exactly what
# the job will run, from the same staged code folder the job uploads. Each epoch prints a
# `METRIC` line, and the launcher's metric definitions read it back.

# %%
import tempfile
from gpu_course.measure import records

work = pathlib.Path(tempfile.mkdtemp(prefix="sagemaker-local-"))
code = sm.stage_code(cfg.engine, work / "code")          # the job's source_dir
sm.dataset_folder(cfg, write=True)                        # generated here if missing
env = {**os.environ, "SM_CHANNEL_TRAINING": str(sm.dataset_root(cfg)),
       "SM_OUTPUT_DATA_DIR": str(records.default_runs_dir()),  # the record joins local runs
       "SM_MODEL_DIR": str(work / "model"), "SM_OUTPUT_DIR": str(work / "output")}
argv = [item for key, value in sm.hyperparameters(cfg).items() for item in (f"--{key}", value)]
job_log = subprocess.run([sys.executable, "sagemaker_entry.py", *argv], cwd=code, env=env,
                         capture_output=True, text=True)
print(job_log.stdout[-1500:])
if job_log.returncode:
    raise RuntimeError(f"the entry script failed:\n{job_log.stderr[-3000:]}")

# %%
import re

metrics = [{d["Name"]: float(m.group(1)) for d in sm.metric_definitions()
            if (m := re.search(d["Regex"], line))}
           for line in job_log.stdout.splitlines() if line.startswith("METRIC ")]
tables.show(pd.DataFrame(metrics))

# %% [markdown]
# On a machine without a GPU the `gpu_util` column is missing: the line says `gpu_util=nan`
# and the metric definition skips it, just as SageMaker would.

# %% [markdown]
# ## Launch, or not
# With AWS credentials and a SageMaker execution role (a SageMaker notebook instance has
# both), `sm.launch` uploads the dataset, starts the job, streams its log and returns its
# name; `sm.fetch_runs` downloads the job's `output.tar.gz` and unpacks the run record into
# the local runs folder. Without credentials nothing is launched.

# %%
cloud_runs = []
if sm.aws_credentials():
    cloud = cfg.replace(name=f"{cfg.name} on {INSTANCE_TYPE}")  # tells the runs apart
    job = sm.launch(cloud, INSTANCE_TYPE, INSTANCE_COUNT, role=ROLE)
    cloud_runs = sm.fetch_runs(job)
    print(f"job {job}: {len(cloud_runs)} run record(s) fetched")
else:
    print("No AWS credentials here: the specification above is the job that would run; "
          "nothing was launched.")

# %% [markdown]
# ## Beside the local runs
# The job's record is an ordinary run record, so the course's plots take it as they take
# local runs. (Without a job, only the local run is on the chart.)

# %%
from gpu_course.show import plots, report

local = [r for r in records.load_runs(names=[cfg.name]) if r.meta.get("engine") == cfg.engine][-1:]
runs = local + cloud_runs
plots.throughput(runs)

# %%
display(tables.show(report.ladder_table(runs)))
for run in cloud_runs:
    ratio = report.samples_per_sec(run) / report.samples_per_sec(local[0])
    device = (run.meta["hardware"]["gpus"] or [{"name": "CPU"}])[0]["name"]
    print(f"{run.name} on {device}: {report.samples_per_sec(run):,.0f} samples/s, "
          f"{ratio:.1f}x this machine's {report.samples_per_sec(local[0]):,.0f}.")
if not cloud_runs:
    print(f"Only the local run: {report.samples_per_sec(local[0]):,.0f} samples/s on this "
          "machine. Run this notebook with AWS credentials to add the SageMaker job's.")
