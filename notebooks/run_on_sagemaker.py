# %% [markdown]
# # Running the course on SageMaker
#
# **What this notebook does.** It runs one experiment of the course as an Amazon SageMaker
# training job: the same `Experiment`, the same training loop and the same run record as
# on your own machine, on a GPU you rent by the second. The record comes back and is
# plotted beside your local runs, so "my laptop" and "a GPU in the cloud" compare on
# one chart.
#
# **Which SDK, which container.** The PyTorch track's job is built with the SageMaker Python
# SDK v3 (`ModelTrainer`, in the PyTorch environment) and runs in AWS's PyTorch 2.10 training
# container, whose torch it uses; the course's package travels beside the entry script.
# The Gluon track's job is built with SDK v2 (the `MXNet` estimator, in the Gluon
# environment: v3 has no MXNet) and runs in AWS's MXNet 1.9.0 container. **That path rests on
# a retired framework (Apache MXNet), a container AWS has not patched since 2023-10-01, and an
# SDK whose support ends on 2027-07-06**: use it to compare with the talk, not to build on.
#
# **The numbers to compare with.** AWS's I/O sample ran its PyTorch job on an
# `ml.p3.2xlarge` (one V100): with **1** DataLoader worker it trained at about **100
# images/s** with the GPU peaking at **50 %**; with **7** workers, about **300 images/s**
# at **~95 %**. The talk ("The Steady State", a V100 in 2019) went from **306 samples/s**
# (naive) to **663** (29 workers) and **941** (hybridized) on one GPU. Those came from a
# V100 years ago; the numbers below come from the machines this notebook runs on.
#
# **Without AWS credentials** (CI, a laptop) the notebook shows the job it would launch,
# runs that job's entry script here, and stops there: nothing pretends a job ran.

# %% jupyter={"source_hidden": true}
import pathlib, sys  # makes gpu_course importable here; a fresh kernel gets its track installed
sys.path.insert(0, str(next(p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "course_setup.py").is_file())))
import course_setup; course_setup.ensure()  # noqa: E702  (notebooks/course_setup.py)

# %%
import importlib.util
import os
import subprocess
import tempfile
from gpu_course.show import plots, report, tables
from gpu_course.measure import records
from gpu_course_sagemaker import launch as sm
from gpu_course.config import Experiment, smoke_mode

# %% tags=["parameters"]
SMOKE = smoke_mode()                 # GPU_COURSE_SMOKE=1 (CI sets it): a tiny job
INSTANCE_TYPE = "ml.g5.xlarge"       # an A10G: both tracks; see the table below
INSTANCE_COUNT = 1                   # > 1 uses the framework's distribution option
ROLE = None                          # None: this notebook instance's execution role
NUM_WORKERS = 1 if SMOKE else 7      # the I/O sample's fix: 1 -> 7 workers
MODEL = "tiny" if SMOKE else "resnet20"
TRAIN_SIZE, TEST_SIZE = (512, 256) if SMOKE else (50_000, 10_000)   # images
EPOCHS = 1 if SMOKE else 3

# %% [markdown]
# ## The instance
# A training job names an instance type. Which track each one runs, and why, comes from the
# table the course uses to pick a track on your own machine (`gpu_course/engines.py`):
# MXNet 1.9 has machine code up to the A10G's sm_86; on Ada (L4, L40S: sm_89) CUDA runs that
# code by binary compatibility, not yet tried on such a card; on Hopper (`ml.p5`) nothing of
# it runs. The PyTorch track runs on all of them. The V100's `ml.p3` family is being retired.

# %%
tables.show(sm.instance_table())

# %% [markdown]
# ## The job
# The course's `Experiment` travels as hyperparameters, every field as text the entry
# script parses back with the same checks as everywhere else in the course; SageMaker
# charts the metrics its regular expressions read from the job's log. `sm.build` hands the
# same settings to the track's SDK: v3's `ModelTrainer` or v2's `MXNet` estimator. Below is
# the `CreateTrainingJob` request that SDK sends, caught on a session that sends nothing
# (no AWS account needed) and checked against botocore's own model of the SageMaker API.

# %%
cfg = Experiment(name=f"sagemaker-workers-{NUM_WORKERS}",
                 engine="gluon" if importlib.util.find_spec("mxnet") else "pytorch",
                 model=MODEL, train_size=TRAIN_SIZE, test_size=TEST_SIZE, epochs=EPOCHS,
                 batch_size=64, num_workers=NUM_WORKERS, warmup_steps=2)
job = sm.Job(INSTANCE_TYPE, INSTANCE_COUNT, role=ROLE)   # <- the machine you rent, and for how long
request = sm.check_request(sm.training_request(cfg, job))   # <- what the SDK sends, checked
tables.show(sm.describe(request))
code = sm.stage_code(cfg.engine, tempfile.mkdtemp(prefix="sagemaker-code-"))  # entry + gpu_course/

# %% [markdown]
# ## The entry script, here
# `gpu_course_sagemaker/entry.py` is what the container runs, as `sagemaker_entry.py` at
# the top of the code folder above. It reads everything from SageMaker's environment
# variables (`SM_CHANNEL_TRAINING`, `SM_MODEL_DIR`, `SM_OUTPUT_DATA_DIR`, `SM_NUM_GPUS`),
# so pointing them at local folders runs exactly what the job will run, from the same
# folder the job uploads. Each epoch prints a `METRIC` line; the estimator's metric
# definitions read them back, and what they read is the job's result, as SageMaker would
# chart it.

# %%
work = pathlib.Path(tempfile.mkdtemp(prefix="sagemaker-local-"))
sm.dataset_folder(cfg, write=True)                         # generated here if missing
job = subprocess.run(
    [sys.executable, sm.ENTRY_POINT,
     *[item for key, value in sm.hyperparameters(cfg).items() for item in (f"--{key}", value)]],
    cwd=code, capture_output=True, text=True,
    env={**os.environ, "SM_CHANNEL_TRAINING": str(sm.dataset_root(cfg)),
         "SM_OUTPUT_DATA_DIR": str(records.default_runs_dir()),   # the record joins local runs
         "SM_MODEL_DIR": str(work / "model"), "SM_OUTPUT_DIR": str(work / "output")})
if job.returncode:
    raise RuntimeError(f"the entry script failed:\n{job.stderr[-3000:]}")
tables.show(sm.read_metrics(job.stdout))

# %% [markdown]
# On a machine without a GPU the `gpu_util` column is missing: the line says `gpu_util=nan`
# and the metric definition skips it, just as SageMaker would.
#
# ## Launch, or not
# With AWS credentials and a SageMaker execution role (a SageMaker notebook instance has
# both), `fit` starts the job with the data set as its `training` channel (`sm.upload_dataset`
# puts the folder on S3 first) and streams its log. `sm.fetch_runs` downloads the job's
# `output.tar.gz` and unpacks the run record into the local runs folder, where the course's
# tables and plots take it as they take a local run: the table sets the job beside the
# local one, on its own machine.

# %%
if sm.aws_credentials():
    name = sm.launch(cfg, job)                 # <- the job runs; its log streams here
    cloud_runs = sm.fetch_runs(name)
    local = [r for r in records.load_runs(names=[cfg.name]) if r.meta.get("engine") == cfg.engine][-1:]
    display(tables.show(report.ladder_table(local + cloud_runs)))
    display(plots.throughput(local + cloud_runs))
else:
    print("No AWS credentials here: nothing was launched; the table above is this job's "
          "entry script run on this machine.")
