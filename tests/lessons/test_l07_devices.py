"""Lesson 07's plan and conclusions on fake runs: the CPU, one GPU and several GPUs, effects
against noise and too few steps, the hosts, and the communication model's labels."""
import re

import pytest

from gpu_course.scale import localhosts
from gpu_course.lessons import l07_devices as l07
from gpu_course.lessons import sizes

FEW = {"train_size": 256, "batch_size": 32}   # with epochs=2: 8 timed steps a run (epoch 1 warms up)


def scaling(make_run, rates, gpus=0, machine_gpus=None, engine="pytorch", config=None, **options):
    """One run a device count (1, 2, 4, ...), each with its devices as DDP records them."""
    runs = []
    for i, rate in enumerate(rates):
        k = 2 ** i
        devices = ", ".join(f"cuda:{j}" for j in range(k)) if gpus else f"{k} x cpu"
        runs.append(make_run("num-gpus" if i == len(rates) - 1 else f"processes={k}", rate=rate,
                             gpus=min(gpus, k) if gpus else 0, engine=engine,
                             machine_gpus=gpus if machine_gpus is None else machine_gpus,
                             config={"num_gpus": k, **(config or {})}, ran={"world_size": k},
                             notes={"devices": devices}, **options))
    return runs


# -- where it runs ------------------------------------------------------------------------
def test_no_gpu_and_one_gpu_run_two_cpu_processes_over_gloo_and_say_why():
    smoke = sizes("07", smoke=True)
    none = l07.plan("pytorch", 0, 2, smoke)
    one = l07.plan("pytorch", 1, 16, smoke)
    for plan in (none, one):
        assert plan.counts == (1, 2) and not plan.on_gpu and plan.backend == "gloo"
        assert plan.devices(2) == ["cpu", "cpu"] and plan.job_gpus == 0
    assert one.threads == 8 and none.threads == 1
    assert "NCCL needs a GPU for every process" in repr(one) and "over gloo" in repr(one)
    assert "no GPU" in repr(none)
    assert l07.plan("gluon", 1, 4, smoke).counts == (1, 2)
    full = sizes("07", smoke=False)
    assert l07.plan("gluon", 0, 2, full).train_sizes["train_size"] == full.cpu_train_size


def test_several_gpus_get_one_process_each_and_nccl():
    plan = l07.plan("pytorch", 8, 64, sizes("07", smoke=False))
    assert plan.counts == (1, 2, 4, 8) and plan.backend == "nccl" and plan.per_host == 4
    assert plan.devices(4) is None and plan.job_gpus == 8 and plan.threads == 8
    assert plan.train_sizes["train_size"] == 50_000
    assert l07.plan("pytorch", 3, 8, sizes("07")).counts == (1, 2, 3)
    assert l07.plan("gluon", 8, 64, sizes("07")).threads == 32   # one worker a host, 2 hosts
    with pytest.raises(ValueError, match="engine='mxnet' is not allowed"):
        l07.plan("mxnet", 2, 2, sizes("07"))


def test_the_exercise_splits_its_batch_of_gpus_or_of_the_cpu():
    full = sizes("07", smoke=False)
    gpus = l07.plan("pytorch", 8, 64, full).exercise_sizes
    assert (gpus["train_size"], gpus["batch_size"]) == (full.exercise_size, full.exercise_batch)
    cpu = l07.plan("gluon", 1, 2, full).exercise_sizes
    assert (cpu["train_size"], cpu["batch_size"], cpu["test_size"]) == \
        (full.cpu_exercise_size, full.cpu_exercise_batch, full.cpu_test_size)


def test_a_host_sees_its_own_gpus_only_with_one_for_every_process():
    assert localhosts.host_gpus(4, 2, 2) == ["0,1", "2,3"]
    assert localhosts.host_gpus(1, 2, 1) == ["", ""]   # two ranks on cuda:0: NCCL refuses
    assert localhosts.host_gpus(0, 2, 1) == ["", ""]
    assert localhosts.backend(2, 2) == "nccl" and localhosts.backend(1, 2) == "gloo"
    assert localhosts.backend(1, 1) == "nccl" and localhosts.backend(0, 1) == "gloo"


# -- the scaling runs -----------------------------------------------------------------------
def test_gpus_that_scale_well_get_a_verdict_and_no_warning(make_run):
    runs = scaling(make_run, (1000, 1950, 3800), gpus=4)
    said = l07.conclude(runs)
    assert re.search(r"'num-gpus' \(4 processes\) against 'processes=1': ×3\.\d\d, faster", said.text)
    assert re.search(r"scaling efficiency 9\d(\.\d)?%", said.text) and "the talk's best: 74%" in said.text
    assert "Below" not in said.text and "CPU" not in said.text
    assert said.check() == []


def test_gpus_below_seventy_percent_are_said_to_be_kept_waiting(make_run):
    said = l07.conclude(scaling(make_run, (1000, 1100), gpus=2))
    assert re.search(r"scaling efficiency 5\d(\.\d)?%", said.text)
    assert "Below 70%: each GPU is not kept busy" in said.text
    assert said.check() == []


def test_an_impossible_efficiency_is_called_unreliable(make_run):
    said = l07.conclude(scaling(make_run, (1000, 2600), gpus=2))
    assert re.search(r"Unreliable: a scaling efficiency of 1[23]\d% means 2 processes did more "
                     r"than 2 times", said.text)
    assert said.check() == []


def test_too_few_steps_give_no_verdict(make_run):
    said = l07.conclude(scaling(make_run, (1000, 1900), gpus=2, config=FEW, epochs=2))
    assert "over only 8 and 8 timed steps: too few to call either an effect or noise" in said.text
    assert "faster" not in said.text and said.check() == []


def test_cpu_processes_check_the_code_and_a_one_gpu_machine_says_why_it_used_none(make_run):
    said = l07.conclude(scaling(make_run, (600, 610), machine_gpus=1, cpu_count=2))
    assert "These processes ran on the same 2 CPU cores" in said.text
    assert "This machine has one GPU: NCCL needs a GPU for every process" in said.text
    assert said.check() == []
    gluon = l07.conclude(scaling(make_run, (600, 300), engine="gluon", cpu_count=2))
    assert "These 'devices' were CPU contexts on the same 2 CPU cores" in gluon.text
    assert "split_and_load over 2 contexts" in gluon.text and "one GPU" not in gluon.text


def test_a_cpu_efficiency_equal_to_the_talk_s_best_is_said_as_the_measurement(make_run):
    """A clean-clone run measured 74% on 2 CPU processes, which the talk's best also prints:
    the line about the CPU cores names only the measurement, and is said."""
    said = l07.conclude(scaling(make_run, (600, 905), machine_gpus=1, cpu_count=2))
    assert "so 74% says nothing about GPUs" in said.text and "the talk's best: 74%" in said.text
    assert said.check() == []


def test_parameter_server_workers_count_as_devices(make_run):
    runs = [make_run(f"ps workers={n}", rate=r, config={"num_gpus": 0, "kvstore": "dist_sync"},
                     notes={"workers": n, "servers": n}) for n, r in ((1, 500), (2, 900))]
    said = l07.conclude(runs)
    assert list(l07.table(runs)["devices"]) == [1, 2]
    assert "'ps workers=2' (2 workers)" in said.text
    assert re.search(r"scaling efficiency [89]\d(\.\d)?%", said.text)
    assert "These workers ran on the same" in said.text and said.check() == []


def hosts_runs(make_run, rates, gpus=0, config=None, **options):
    one, one_host = scaling(make_run, rates[:2], gpus=gpus, config=config, **options)
    job = make_run("hosts=2", rate=rates[2], gpus=min(gpus, 2), machine_gpus=gpus, engine="pytorch",
                   config={"num_gpus": 2, **(config or {})}, ran={"world_size": 2},
                   notes={"nodes": 2, "procs_per_node": 1,
                          "devices": "cuda:0 on each of 2 hosts" if gpus else "cpu on each of 2 hosts"},
                   **options)
    return [one, one_host, job]


def test_hosts_within_noise_of_one_host_did_the_same_work(make_run):
    said = l07.conclude(hosts_runs(make_run, (1000, 1900, 1900), gpus=4))
    assert re.search(r"'hosts=2' \(2 hosts × 1 process\) against 'num-gpus' \(one host\): "
                     r"×\d\.\d\d, within noise", said.text) and "run-to-run noise" in said.text
    assert said.check() == []


def test_hosts_beyond_noise_cost_something_real(make_run):
    said = l07.conclude(hosts_runs(make_run, (1000, 1900, 1000), gpus=4))
    assert "a slow-down" in said.text and "cost or saved something real" in said.text
    assert said.check() == []


def test_hosts_on_the_cpu_from_few_steps_are_not_judged(make_run):
    said = l07.conclude(hosts_runs(make_run, (600, 800, 700), config=FEW, epochs=2))
    assert re.search(r"\(one host\): ×0\.\d\d over only 8 timed steps, too few", said.text)
    assert "These 'hosts' ran their processes on the same" in said.text
    assert said.check() == []


# -- communication --------------------------------------------------------------------------
def pushpull(rate_at_256k=0.2):
    return [{"bytes": b, "workers": 2, "rounds": 10, "time_s": 2 * b / (g * 1e9),
             "time_min_s": 2 * b / (g * 1.5e9), "time_max_s": 2 * b / (g * 0.5e9),
             "worker_GBps": g, "rank": 0}
            for b, g in ((4096, 0.015), (65536, 0.24), (262144, rate_at_256k), (2**20, 0.84))]


def allreduce_rows():
    return [{"bytes": b, "processes": 2, "iters": 10, "blocks": 5, "time_s": b / (g * 1e9),
             "time_min_s": b / (g * 2e9), "time_max_s": b / (g * 0.5e9), "algbw_GBps": g,
             "busbw_GBps": g} for b, g in ((4096, 0.003), (262144, 0.5), (2**22, 1.03))]


def bucket_rows(exposed_s, spread_s):
    return [{"bucket_cap_mb": cap, "buckets": n, "processes": 2, "grad_bytes": 378_000,
             "batch_size": 8, "t_step_sync_s": 0.020 + exposed_s, "t_step_nosync_s": 0.020,
             "t_allreduce_s": 0.004, "exposed_s": exposed_s, "spread_s": spread_s,
             "overlap": max(0.0, 1 - exposed_s / 0.004)} for cap, n in ((0.05, 8), (25.0, 1))]


def ps_runs(make_run, rates=(500, 900), **options):
    """One worker, then two; a job's images a step grow with its workers, as in a real record."""
    return [make_run(f"ps workers={n}", rate=r, config={"num_gpus": 0, "kvstore": "dist_sync",
                                                        "batch_size": 128 * n},
                     notes={"workers": n, "servers": n}, **options) for n, r in zip((1, 2), rates)]


def test_the_push_and_pull_and_an_exchange_within_the_steps_spread(make_run):
    runs = ps_runs(make_run, (500, 1000), seed=7)   # the same step time: nothing extra
    said = l07.conclude(runs, bench=pushpull(), grad_bytes=378_000)
    assert "Through the server on this machine: 0.015 GB/s (0.0075–0.0225 over its rounds) at " \
        "4 KiB (latency-bound), 0.84 GB/s" in said.text
    assert "The gradients, 0.36 MiB, are nearest 256 KiB: 0.2 GB/s there" in said.text
    assert re.search(r"Extra per step with 'ps workers=2': -0\.\d ms, within 'ps workers=1''s own "
                     r"spread \(±3\.7 ms over its blocks of steps\): the exchange's cost is not "
                     r"measurable here", said.text)
    assert re.search(r"'ps workers=2': the model says 9\d(\.\d)?% \(no overlap\), measured "
                     r"\d+(\.\d)?%", said.text)
    assert "far below what 8 lanes of PCIe carry, 5 GB/s (the lecture)" in said.text
    assert said.check() == []


def test_an_extra_step_beyond_the_spread_is_read_as_the_exchange(make_run):
    runs = ps_runs(make_run, (500, 980), seed=7)   # 4.5 ms longer steps, the exchange 15 ms
    said = l07.conclude(runs, bench=pushpull(rate_at_256k=0.05), grad_bytes=378_000)
    assert re.search(r"\+4\.5 ms \(beyond 'ps workers=1''s own spread, ±3\.7 ms\), so 70(\.\d)?% of "
                     r"the exchange hid behind compute", said.text)
    assert "on one CPU the workers also take cores from each other" in said.text
    assert said.check() == []
    slow = l07.conclude(ps_runs(make_run, (500, 400), seed=7), bench=pushpull(), grad_bytes=378_000)
    assert "so 0% of the exchange hid behind compute" in slow.text and slow.check() == []


def test_a_talk_loss_that_a_link_could_carry_is_put_on_communication(make_run, monkeypatch):
    from gpu_course.scale import distributed
    monkeypatch.setitem(distributed.TALK, "grad_bytes", 500e6)   # gradients of half a gigabyte
    said = l07.conclude(ps_runs(make_run), bench=pushpull(), grad_bytes=378_000)
    assert "what 8 lanes of PCIe carry (5 GB/s, the lecture): communication can explain it" \
        in said.text and said.check() == []


def test_ddp_buckets_within_their_spread_are_not_measurable(make_run):
    runs = hosts_runs(make_run, (1000, 1900, 1850), gpus=4)
    said = l07.conclude(runs, bench=allreduce_rows(), buckets=bucket_rows(0.0003, 0.0066))
    assert "NCCL over 2 processes reached 1.03 GB/s" in said.text
    assert "the lecture's 10 Gbps Ethernet is 1 GB/s, NVLink 40 GB/s" in said.text
    assert "cost +0.3 ms a step, within the steps' spread (±6.6 ms): not measurable" in said.text
    assert "'hosts=2': the model says" in said.text and "On one CPU" not in said.text
    assert said.check() == []


def test_ddp_buckets_beyond_their_spread_say_what_hid_behind_backward(make_run):
    runs = hosts_runs(make_run, (1000, 1900, 1850), gpus=4)
    said = l07.conclude(runs, bench=allreduce_rows(), buckets=bucket_rows(0.001, 0.0002))
    assert "showed 1.0 ms a step (spread 0.2 ms) of the 4.0 ms it takes alone: 75% hidden " \
        "behind backward" in said.text
    assert said.check() == []
    with pytest.raises(ValueError, match="pass grad_bytes"):
        l07.conclude(runs, bench=allreduce_rows())


def test_the_model_is_labelled_and_a_cpu_step_gets_no_gpu_link(make_run):
    cpu = l07.model_table(ps_runs(make_run), 378_000)
    assert not any(m.startswith("this machine's step, NVLink") for m in cpu["model"])
    gpu = l07.model_table(scaling(make_run, (1000, 1900), gpus=2), 378_000)
    assert "this machine's step, NVLink" in set(gpu["model"])
    capped = gpu.set_index("model").loc["ResNet-50 on an A100, NVLink", l07.UPTO]
    assert capped == "≥ 1024 (all it tried)"     # the search's cap: no limit found, not k = 1024
    said = l07.conclude(ps_runs(make_run), bench=pushpull(), grad_bytes=378_000)
    assert said.check() == []
    assert "Model outputs, not measurements" in said.text and "\"≥ 1024\" means" in said.text
    assert "This machine's step is a CPU step" in said.text
    assert "ResNet-50's on an A100 (its 49 MiB of float16 gradients) below 70% from the second" \
        in said.text
    assert "timed steps" not in said.text   # 782 of them: enough


def test_few_steps_make_the_efficiencies_noise(make_run):
    runs = [make_run(f"ps workers={n}", rate=r, config={"num_gpus": 0, **FEW}, epochs=2,
                     notes={"workers": n, "servers": n}) for n, r in ((1, 500), (2, 900))]
    said = l07.conclude(runs, bench=pushpull(), grad_bytes=378_000)
    assert "Only 8 timed steps in 'ps workers=1': these efficiencies are noise" in said.text
    assert said.check() == []


def test_ranks_table_sums_each_process_epochs(make_run):
    run = make_run("hosts=2", notes={"ranks": [
        {"rank": r, "group_rank": r, "epochs": [{"steps": 4, "data_wait_s": 0.1, "compute_s": 0.3},
                                                {"steps": 4, "data_wait_s": 0.1, "compute_s": 0.5}]}
        for r in (0, 1)]})
    frame = l07.ranks(run)
    assert list(frame.columns) == ["rank", "host", "steps", "data_wait_s", "compute_s", "step_s"]
    assert frame["steps"].tolist() == [8, 8] and frame["step_s"].iloc[0] == pytest.approx(0.125)


def test_sizes_are_small_in_smoke_mode():
    smoke, full = sizes("07", smoke=True), sizes("07", smoke=False)
    assert smoke.train_size < full.train_size and smoke["model"] == "tiny"
    assert "bench_sizes" not in smoke and smoke.bench_sizes < full.bench_sizes
