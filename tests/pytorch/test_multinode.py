"""Two "hosts" on 127.0.0.1: two torchrun launches (--nnodes=2, c10d rendezvous) make
one DistributedDataParallel job over gloo, recorded once with every rank's timings."""
from gpu_course.scale.localhosts import LocalJob
from gpu_course.tracks.torch import multinode


def test_two_torchrun_launches_train_one_job_with_every_ranks_timings(small_cfg, runs_dir):
    cfg = small_cfg.replace(name="two-hosts", batch_size=16, test_size=32)
    run = multinode.launch_local(cfg, nodes=2, procs_per_node=1,
                                 job=LocalJob(runs_dir, timeout=600))
    assert run.status == "finished" and run.path.parent == runs_dir
    assert len(list(runs_dir.iterdir())) == 1               # one record for the job
    notes = run.meta["notes"]
    assert run.meta["ran"]["world_size"] == 2 and notes["nodes"] == 2 and notes["procs_per_node"] == 1
    assert "on each of 2 hosts" in notes["devices"]
    assert run.config["num_gpus"] == 2
    ranks = notes["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1]
    assert sorted(r["group_rank"] for r in ranks) == [0, 1]  # one process on each host
    for r in ranks:  # each rank: half of 256 images, 8 steps of 16, timed
        (epoch,) = r["epochs"]
        assert epoch["steps"] == 8 and epoch["samples"] == 256
        assert epoch["compute_s"] > 0 and epoch["epoch_time_s"] > 0
    assert list(run.epochs["samples"]) == [256]


def test_commands_for_real_hosts():
    lines = multinode.commands("cfg.json", "runs", nodes=2, procs_per_node=8)
    assert len(lines) == 2
    assert lines[1].startswith("torchrun --nnodes=2 --node-rank=1 --nproc-per-node=8 "
                               "--rdzv-backend=c10d --rdzv-endpoint=HOST0:29500")
    assert lines[0].endswith("-m gpu_course.tracks.torch.ddp --config cfg.json --runs-dir runs")
