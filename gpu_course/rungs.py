"""The ladder's rungs by name: one vocabulary for the ladder, `diagnose`, the tables and
the lessons; a track's own rung in its own words (`GRAPH`, `PRECISION`)."""
from __future__ import annotations

from enum import StrEnum


class RungName(StrEnum):
    NAIVE = "naive"
    WORKERS = "workers"
    DATA_FORMAT = "data-format"      # the talk's off-line pre-processing: a format read faster
    HYBRIDIZE = "hybridize"          # Gluon's graph
    COMPILE = "compile"              # PyTorch's graph
    FLOAT16 = "float16"              # Gluon's lower precision
    BFLOAT16 = "bfloat16"            # PyTorch's
    LARGE_BATCH = "large-batch"
    LR_SCHEDULE = "lr-schedule"
    DATA_ON_GPU = "data-on-gpu"
    THREADS = "threads"
    ALL_GPUS = "all-gpus"
    # not a rung: the tuned rung again over more epochs, a separate line after the ladder
    LONGER = "tuned, longer"


# the rung each track names in its own words, by engine
GRAPH = {"gluon": RungName.HYBRIDIZE, "pytorch": RungName.COMPILE}
PRECISION = {"gluon": RungName.FLOAT16, "pytorch": RungName.BFLOAT16}

# the lesson that shows each rung's change on its own
LESSON = {RungName.NAIVE: "01", RungName.WORKERS: "02", RungName.HYBRIDIZE: "03",
          RungName.COMPILE: "03", RungName.FLOAT16: "04", RungName.BFLOAT16: "04",
          RungName.LARGE_BATCH: "05", RungName.LR_SCHEDULE: "06", RungName.ALL_GPUS: "07",
          RungName.DATA_FORMAT: "09", RungName.DATA_ON_GPU: "09", RungName.THREADS: "11"}
