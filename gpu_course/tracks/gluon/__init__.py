"""The Gluon (Apache MXNet 1.9) track: `from gpu_course import gluon as gc`, the same public
names as `gpu_course.tracks.torch`, so a lesson reads the same in both (`tracks.Names`)."""
from __future__ import annotations

from .. import track
from ...config import Experiment
from ...env.cores import check_thread_variables

check_thread_variables()   # before MXNet loads: it aborts the process on a garbled count

track(__name__, "gluon", {
    "split": "loop:split", "optimizer_params": "optim:optimizer_params",
    "make_trainer": "optim:make_trainer"})

