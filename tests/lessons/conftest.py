"""Fake runs for the lessons' conclusions: real run folders (tests/fake_runs.py), read
back with the course's own loader, so a lesson module is tested on records exactly as
a notebook hands them over, for branches a CPU never takes (a GPU, two GPUs, TF32...)."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fake_runs  # noqa: E402


@pytest.fixture
def make_run(tmp_path):
    """make_run(name, rate=..., gpus=0, engine="gluon", config={...}, ran={...},
    notes={...}, **write_run options) -> Run. gpus=0 is a CPU run (no GPU in the
    machine); gpus=k trains on k of a machine's GPUs. Each call gets the next index, so
    runs sort in the order made."""
    count = [0]

    def make(name, rate=600.0, gpus=0, engine="gluon", config=None, ran=None, notes=None,
             seed=None, **options):
        i = count[0]
        count[0] += 1
        options.setdefault("machine_gpus", gpus)
        path = fake_runs.write_run(tmp_path, name, engine=engine, num_gpus=gpus,
                                   samples_per_sec=rate, config=config, index=i,
                                   seed=i if seed is None else seed, **options)
        meta = json.loads((path / "run.json").read_text())
        meta["ran"] = dict(ran or {})
        meta["notes"] = {"devices": "cuda:0" if gpus else "cpu", **(notes or {})}
        (path / "run.json").write_text(json.dumps(meta))
        return fake_runs.load(path)

    return make
