"""Lesson 07's plan and conclusions on fake runs: the CPU, one GPU and several GPUs, effects
against noise and too few steps, the hosts, and the communication model's labels."""
import re

import pytest

from gpu_course.scale import exchange, localhosts
from gpu_course.lessons import l07_devices as l07
from gpu_course.lessons import sizes
from gpu_course.lessons.l07_devices import HOSTS, LESSON
from gpu_course.show import closing
from declared import paragraphs
from gpu_course.show.findings import Outcome, Where

FEW = {"train_size": 256, "batch_size": 32}   # with epochs=2: 8 timed steps a run (epoch 1 warms up)


def scaling(make_run, rates, gpus=0, machine_gpus=None, engine="pytorch", config=None, **options):
    """One run a device count (1, 2, 4, ...), each with its devices as DDP records them."""
    runs = []
    for i, rate in enumerate(rates):
        k = 2 ** i
        devices = ", ".join(f"cuda:{j}" for j in range(k)) if gpus else f"{k} x cpu"
        runs.append(make_run("all-gpus" if i == len(rates) - 1 else f"processes={k}", rate=rate,
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
MEANS = LESSON.compares[0].means
BELOW, ABOVE = (limit.text for limit in sorted(LESSON.limits, key=lambda x: x.above))
# rates of 1, 2 (, 4) devices, where they ran -> the paragraph the declaration gives them
OUTCOMES = [
    ((1000, 1950, 3800), dict(gpus=4), MEANS[Outcome.EXPECTED][Where.GPU]),
    ((1000, 1005), dict(gpus=2), MEANS[Outcome.NONE]),
    ((1000, 600), dict(gpus=2), MEANS[Outcome.OPPOSITE][Where.GPU]),
    ((1000, 1100), dict(gpus=2), BELOW),
    ((1000, 2600), dict(gpus=2), ABOVE),
    ((600, 300), dict(engine="gluon", cpu_count=2), MEANS[Outcome.OPPOSITE][Where.CPU]),
    ((600, 610), dict(machine_gpus=1, cpu_count=2), LESSON.cpu["pytorch"]),
    ((1000, 1900), dict(gpus=2, config=FEW, epochs=2), MEANS[Outcome.CANNOT_JUDGE]),
]


@pytest.mark.parametrize("rates, where, paragraph", OUTCOMES)
def test_each_outcome_says_the_paragraph_the_lesson_declares(make_run, rates, where, paragraph):
    said = l07.conclude(scaling(make_run, rates, **where))
    assert paragraph in said.text and said.check() == []
    assert ("CPU" in said.text) == (not where.get("gpus"))
    assert "Scaling efficiency in percent" in said.text and "The talk, on 4 V100s" in said.text
    assert ("too few steps" in said.text) == ("config" in where)


def test_the_first_gpu_count_below_the_bar_is_named(make_run):
    said = l07.conclude(scaling(make_run, (1000, 1300, 1500), gpus=4))
    assert re.search(r"'processes=2': scaling efficiency 6\d(\.\d)?%, below 70%: each GPU",
                     said.text)
    assert said.text.count("each GPU is not kept busy") == 1 and said.check() == []


def test_a_cpu_efficiency_equal_to_the_talk_s_best_is_said_as_the_measurement(make_run):
    """A clean-clone run measured 74% on 2 CPU processes, which the talk's best also prints:
    the efficiency line names only the measurement, and is said."""
    said = l07.conclude(scaling(make_run, (600, 905), machine_gpus=1, cpu_count=2))
    assert "'all-gpus' 74.0" in said.text and "best scaling efficiency (at batch 640 a GPU) 74%" \
        in said.text
    assert said.check() == []


def test_parameter_server_workers_count_as_devices(make_run):
    runs = [make_run(f"ps workers={n}", rate=r, config={"num_gpus": 0, "kvstore": "dist_sync"},
                     notes={"workers": n, "servers": n}) for n, r in ((1, 500), (2, 900))]
    said = l07.conclude(runs)
    assert list(l07.table(runs)["devices"]) == [1, 2]
    assert re.search(r"'ps workers=2' against 'ps workers=1': ×1\.\d\d, faster", said.text)
    assert "identical jobs" not in said.text and "parameter server" in said.text
    assert said.check() == []


def hosts_runs(make_run, rates, gpus=0, config=None, **options):
    one, one_host = scaling(make_run, rates[:2], gpus=gpus, config=config, **options)
    job = make_run("hosts=2", rate=rates[2], gpus=min(gpus, 2), machine_gpus=gpus, engine="pytorch",
                   config={"num_gpus": 2, **(config or {})}, ran={"world_size": 2},
                   notes={"nodes": 2, "procs_per_node": 1,
                          "devices": "cuda:0 on each of 2 hosts" if gpus else "cpu on each of 2 hosts"},
                   **options)
    return [one, one_host, job]


@pytest.mark.parametrize("job, outcome", [(1900, Outcome.EXPECTED), (1000, Outcome.OPPOSITE)])
def test_hosts_against_one_host_of_as_many_processes(make_run, job, outcome):
    said = l07.conclude(hosts_runs(make_run, (1000, 1900, job), gpus=4))
    assert "'hosts=2' against 'all-gpus': ×" in said.text
    assert HOSTS.compares[0].means[outcome] in said.text and said.check() == []
    assert list(l07.table(hosts_runs(make_run, (100, 200, 300)))["hosts"]) == [1, 1, 2]


def test_hosts_on_the_cpu_from_few_steps_are_not_judged(make_run):
    said = l07.conclude(hosts_runs(make_run, (600, 800, 700), config=FEW, epochs=2))
    assert re.search(r"'hosts=2' against 'all-gpus': ×0\.\d\d, too few steps", said.text)
    assert "--nnodes and a c10d rendezvous" in said.text and said.check() == []


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


def mark(reading, value):
    return next(m.text for m in reading.marks if value in m.values)


@pytest.mark.parametrize("rates, rate_at_256k, where, lost", [
    ((500, 1000), 0.2, Where.CPU, l07.WITHIN),     # the same step time: nothing extra
    ((500, 980), 0.05, Where.CPU, l07.BEYOND),     # 4.5 ms longer steps, the exchange 15 ms
    ((500, 1300), 0.2, Where.CPU, l07.SHORTER)])
def test_the_exchange_measured_says_what_its_extra_time_a_step_means(make_run, rates,
                                                                     rate_at_256k, where, lost):
    runs = ps_runs(make_run, rates, seed=7)
    said = l07.conclude(runs, bench=pushpull(rate_at_256k), grad_bytes=378_000)
    paragraph = mark(l07.MEASURED, lost)
    assert (paragraph if isinstance(paragraph, str) else paragraph[where]) in said.text
    assert "Each row: a worker's median push and pull through the server" in said.text
    assert "The lecture, on its table of links: 10 Gbps Ethernet 1 GB/s; NVLink 40 GB/s." \
        in said.text
    assert re.search(r"The model's efficiency in percent \(no overlap\): 'ps workers=2' 9\d", said.text)
    assert said.check() == []
    frame = l07.bench_table(pushpull(), 378_000)
    assert list(frame["the model's rate"]) == ["", "", exchange.NEAREST, ""]   # 256 KiB


@pytest.mark.parametrize("grad_bytes, side", [(None, "far below"), (500e6, "communication can "
                                                                            "explain it")])
def test_the_talks_loss_a_step_is_put_on_communication_only_where_a_link_could_carry_it(
        make_run, monkeypatch, grad_bytes, side):
    from gpu_course.scale import distributed
    if grad_bytes:
        monkeypatch.setitem(distributed.TALK, "grad_bytes", grad_bytes)
    said = l07.conclude(ps_runs(make_run), bench=pushpull(), grad_bytes=378_000)
    assert re.search(r"'the talk, 4 V100s': its loss a step, were it all the gradients' "
                     r"all-reduce, would mean [\d.]+ GB/s, (below|above) 5 GB/s: .*" + side, said.text)
    assert said.text.count("8 PCIe lanes") == 1 and said.check() == []


@pytest.mark.parametrize("exposed_s, spread_s, exposed", [(0.0003, 0.0066, l07.WITHIN),
                                                          (0.001, 0.0002, l07.BEYOND)])
def test_ddp_buckets_say_whether_the_all_reduce_showed(make_run, exposed_s, spread_s, exposed):
    runs = hosts_runs(make_run, (1000, 1900, 1850), gpus=4)
    said = l07.conclude(runs, bench=allreduce_rows(), buckets=bucket_rows(exposed_s, spread_s))
    assert mark(l07.BUCKETS, exposed) in said.text
    assert "the median all-reduce between the processes" in said.text
    assert "On one CPU" not in said.text and said.check() == []
    with pytest.raises(ValueError, match="pass grad_bytes"):
        l07.conclude(runs, bench=allreduce_rows())


def test_the_model_is_labelled_and_a_cpu_step_gets_no_gpu_link(make_run):
    cpu = l07.model_table(ps_runs(make_run), 378_000, l07.MODELLED)
    assert not any(m.startswith("this machine's step, NVLink") for m in cpu["model"])
    gpu = l07.model_table(scaling(make_run, (1000, 1900), gpus=2), 378_000, l07.MODELLED)
    assert "this machine's step, NVLink" in set(gpu["model"])
    capped = gpu.set_index("model").loc["ResNet-50 on an A100, NVLink", l07.UPTO]
    assert capped == "≥ 1024 (all it tried)"     # the search's cap: no limit found, not k = 1024
    assert gpu.set_index("model").loc["ResNet-50 on an A100, 10 Gbps Ethernet", l07.UPTO] == \
        "none: below from k = 2"
    said = l07.conclude(ps_runs(make_run), bench=pushpull(), grad_bytes=378_000)
    assert said.check() == []
    assert "Model outputs, not measurements" in said.text
    assert "This step is a CPU's" in said.text
    assert "steady steps" not in said.text   # 782 of them: enough


def test_few_steps_make_the_efficiencies_noise(make_run):
    runs = [make_run(f"ps workers={n}", rate=r, config={"num_gpus": 0, **FEW}, epochs=2,
                     notes={"workers": n, "servers": n}) for n, r in ((1, 500), (2, 900))]
    said = l07.conclude(runs, bench=pushpull(), grad_bytes=378_000)
    assert "'ps workers=1': steady steps 8, below 20: too few: these efficiencies are noise" \
        in said.text
    assert said.check() == []


def test_the_lessons_paragraphs_carry_no_number():
    for declared in (LESSON, HOSTS, l07.BENCH, l07.BUCKETS, l07.MEASURED, l07.MODEL):
        assert all(not closing.measurements(p) for p in paragraphs(declared))


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
