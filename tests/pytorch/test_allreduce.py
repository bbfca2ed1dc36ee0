"""The all-reduce benchmark as real gloo processes on 127.0.0.1."""
from gpu_course.tracks.torch import allreduce


def test_allreduce_numbers_are_positive_and_grow_with_message_size():
    sizes = (4 * allreduce.KiB, 64 * allreduce.MiB)
    rows = allreduce.run_local(procs=2, sizes=sizes, backend="gloo", min_seconds=0.05)
    assert [r["bytes"] for r in rows] == list(sizes)
    assert all(r["time_s"] > 0 and r["busbw_GBps"] > 0 and r["processes"] == 2 for r in rows)
    # the median of the timed blocks, with their spread beside it
    assert all(r["blocks"] == 5 and r["time_min_s"] <= r["time_s"] <= r["time_max_s"] for r in rows)
    small, large = rows
    assert large["time_s"] > small["time_s"]
    # 4 KiB is latency-bound: 16,000 times the data takes far less than 16,000
    # times as long (the margin is wide for a machine busy with other work)
    assert large["algbw_GBps"] > 3 * small["algbw_GBps"]
    assert "MiB" in allreduce.format_rows(rows) and len(allreduce.LECTURE_BANDWIDTHS) == 6


def test_ddp_bucket_sweep_measures_steps_with_and_without_sync():
    from gpu_course.tracks.torch import ddp_comm
    rows = ddp_comm.run_local(procs=2, model="tiny", batch_size=8, buckets_mb=(0.001, 25.0),
                              steps=3, warmup=1)
    assert [r["bucket_cap_mb"] for r in rows] == [0.001, 25.0]
    assert rows[0]["buckets"] > rows[1]["buckets"] == 1
    for r in rows:
        assert r["t_step_sync_s"] > 0 and r["t_step_nosync_s"] > 0 and r["t_allreduce_s"] > 0
        assert 0 <= r["overlap"] <= 1 and r["processes"] == 2
