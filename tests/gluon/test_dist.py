"""MXNet's parameter server as real processes on 127.0.0.1: a scheduler, one server and
two workers (kvstore='dist_sync'), each worker on its own shard."""
import json

import mxnet as mx
import numpy as np
import pytest

from gpu_course.tracks import gluon as gc
from gpu_course.scale.localhosts import LocalJob
from gpu_course.tracks.gluon import dist


def test_two_workers_one_server_end_with_identical_parameters(small_cfg, runs_dir, tmp_path):
    cfg = small_cfg.replace(name="dist", num_gpus=0)
    run = dist.launch_local(cfg, workers=2, servers=1, job=LocalJob(runs_dir, timeout=600),
                            work_dir=tmp_path / "job")
    assert run.status == "finished" and len(list(runs_dir.iterdir())) == 1
    notes = run.meta["notes"]
    assert (notes["workers"], notes["servers"], notes["kvstore"]) == (2, 1, "dist_sync")
    assert set(notes["exit_codes"].values()) == {0}  # scheduler and server ended too
    assert [r["rank"] for r in notes["ranks"]] == [0, 1]
    for r in notes["ranks"]:  # each worker: half of 256 images, 4 steps of 32
        (epoch,) = r["epochs"]
        assert epoch["steps"] == 4 and epoch["samples"] == 256 and epoch["compute_s"] > 0
    assert run.epochs[["loss", "val_acc"]].notna().all(axis=None)
    a = mx.nd.load(str(tmp_path / "job" / "worker0.params"))
    b = mx.nd.load(str(tmp_path / "job" / "worker1.params"))
    assert a.keys() == b.keys() and len(a) > 0
    trained = [k for k in a if not k.endswith(("running_mean", "running_var"))]
    assert trained
    for key in trained:  # every step pulled the same weights from the server
        np.testing.assert_array_equal(a[key].asnumpy(), b[key].asnumpy())
    # BatchNorm's running statistics are no gradients: each worker keeps its shard's
    stats = [k for k in a if k not in trained]
    assert stats and any((a[k] != b[k]).sum().asscalar() for k in stats)


def test_a_worker_outside_a_job_says_how_to_start_one(small_cfg, monkeypatch):
    monkeypatch.delenv("DMLC_ROLE", raising=False)
    with pytest.raises(ValueError, match="DMLC_ROLE=worker"):
        dist.train_worker(small_cfg)


def test_role_environment_and_the_command_for_real_hosts():
    env = dist.role_env("server", 9000, workers=4, servers=2, uri="10.0.0.1")
    assert env == {"DMLC_ROLE": "server", "DMLC_PS_ROOT_URI": "10.0.0.1",
                   "DMLC_PS_ROOT_PORT": "9000", "DMLC_NUM_WORKER": "4", "DMLC_NUM_SERVER": "2"}
    assert "launch.py -n 2 -s 2 -H hosts --launcher ssh" in dist.commands(2, 2)
    with pytest.raises(ValueError, match="role"):
        dist.role_env("boss", 1, 1, 1)


def test_push_pull_through_the_server_costs_more_for_larger_arrays():
    rows = dist.bench_local(workers=2, servers=1, sizes=(4 * dist.KiB, 16 * dist.MiB), iters=5,
                            timeout=600)
    small, large = rows
    assert all(r["rounds"] == 5 and r["time_min_s"] <= r["time_s"] <= r["time_max_s"] for r in rows)
    # 4,096 times the bytes: the fastest rounds (the least disturbed on a shared machine)
    # keep the order, and the medians' bandwidths part by far more than the bar
    assert small["workers"] == 2 and small["time_s"] > 0
    assert large["time_min_s"] > small["time_min_s"]
    assert large["worker_GBps"] > 3 * small["worker_GBps"]  # small arrays: latency-bound


def test_a_worker_without_a_scheduler_says_so_instead_of_waiting_forever(monkeypatch):
    from gpu_course.scale.localhosts import free_port
    cfg = gc.Experiment(engine="gluon", model="tiny", num_gpus=0)
    port = free_port()  # nothing listens there
    monkeypatch.setenv("DMLC_ROLE", "worker")
    for name, value in (("DMLC_PS_ROOT_URI", "127.0.0.1"), ("DMLC_PS_ROOT_PORT", str(port)),
                        ("DMLC_NUM_SERVER", "1"), ("DMLC_NUM_WORKER", "1")):
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(dist, "SCHEDULER_WAIT_S", 1.0)
    with pytest.raises(RuntimeError, match=f"no parameter-server scheduler at DMLC_PS_ROOT_URI="
                                           f"127.0.0.1 DMLC_PS_ROOT_PORT={port} after 1 s"):
        dist.train_worker(cfg)
    monkeypatch.setenv("DMLC_NUM_WORKER", "two")
    with pytest.raises(ValueError, match="DMLC_NUM_WORKER='two'"):
        dist.train_worker(cfg)


def test_a_worker_timings_file_cut_short_is_named_and_skipped(tmp_path):
    (tmp_path / "worker0.json").write_text(json.dumps({"rank": 0, "epochs": []}))
    (tmp_path / "worker1.json").write_text('{"rank": 1, "epo')
    with pytest.warns(UserWarning, match=r"skipping .*worker1.json: unreadable worker timings"):
        assert [r["rank"] for r in dist._timings(tmp_path)] == [0]
