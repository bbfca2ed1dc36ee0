"""How much CPU the GpuMonitor's sampling thread costs.

    python -m tools.monitor_overhead                  # this machine's NVML (or CPU only)
    python -m tools.monitor_overhead --fake-gpus 8    # the tests' fake NVML, 8 GPUs

The sampling thread reads its own CPU time (``time.thread_time``) after every tick, so
the cost is measured where it is spent, whatever else the process does. Budget: under
1 % of one core at 5 Hz (interval 0.2 s). A fake GPU costs Python calls only; real NVML
calls go through the driver (ioctl), so run it on a GPU machine for the real number.
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

from gpu_course.measure import nvml
from gpu_course.measure.monitor import GpuMonitor

BUDGET_PERCENT = 1.0


def use_fake_nvml(gpus):
    """Put the test suite's fake pynvml (tests/fake_pynvml.py) in place of the real one."""
    tests = Path(__file__).resolve().parents[1] / "tests"
    if not (tests / "fake_pynvml.py").exists():
        raise SystemExit(f"--fake-gpus needs the repository's tests/fake_pynvml.py (not in {tests})")
    sys.path.insert(0, str(tests))
    from fake_pynvml import FakeGpu, FakePynvml
    sys.modules["pynvml"] = FakePynvml([FakeGpu(gpm=True) for _ in range(gpus)])
    nvml.shutdown()   # the next call loads the fake


def measure(seconds=10.0, interval=0.2):
    """Run a monitor for ``seconds``; return its tick count and the sampling thread's CPU time."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        monitor = GpuMonitor(interval=interval)
    with monitor:
        time.sleep(seconds)
    wall = monitor.now()
    return {"gpus": len(monitor.available_gpus), "ticks": monitor.ticks,
            "missed_ticks": monitor.missed_ticks, "wall_s": wall,
            "cpu_s": monitor.sampler_cpu_s, "notice": monitor.notice,
            "percent_of_core": 100.0 * monitor.sampler_cpu_s / wall}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to sample")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--fake-gpus", type=int, default=0, metavar="N",
                        help="simulate N GPUs with the tests' fake NVML")
    args = parser.parse_args(argv)
    if args.fake_gpus:
        use_fake_nvml(args.fake_gpus)
    result = measure(args.seconds, args.interval)
    what = (f"{result['gpus']} {'fake ' if args.fake_gpus else ''}GPU(s) + host"
            if result["gpus"] else "host only (" + (result["notice"] or "no GPUs") + ")")
    verdict = "OK" if result["percent_of_core"] < BUDGET_PERCENT else "OVER BUDGET"
    print(f"monitor overhead: {1 / args.interval:.1f} Hz, {what}: {result['ticks']} ticks "
          f"in {result['wall_s']:.1f} s, sampling thread used {result['cpu_s'] * 1e3:.1f} ms CPU "
          f"= {result['percent_of_core']:.3f}% of one core "
          f"({result['cpu_s'] / max(result['ticks'], 1) * 1e6:.0f} us/tick); "
          f"budget {BUDGET_PERCENT:g}% -> {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
