"""The scaling model against cases computed by hand."""
import math

import pytest

from gpu_course.scale import scaling


def test_ring_allreduce_time_by_hand():
    assert scaling.allreduce_time(1e8, 1, 1e9) == 0.0
    assert scaling.allreduce_time(1e8, 2, 1e9) == pytest.approx(0.1)          # 2*1/2 * 0.1 s
    assert scaling.allreduce_time(1e8, 4, 1e9) == pytest.approx(0.15)         # 2*3/4 * 0.1 s
    assert scaling.allreduce_time(0, 4, 1e9, latency=1e-3) == pytest.approx(6e-3)  # 6 hops


def test_efficiency_without_and_with_overlap():
    rows = scaling.predict([1, 2, 4], t_compute=0.1, grad_bytes=1e8, busbw=1e9)
    assert [r["efficiency"] for r in rows] == pytest.approx([1.0, 0.5, 0.1 / 0.25])
    assert rows[2]["speedup"] == pytest.approx(4 * 0.4)
    half = scaling.predict([2], t_compute=0.1, grad_bytes=1e8, busbw=1e9, overlap=0.5)[0]
    assert half["exposed_s"] == pytest.approx(0.05) and half["efficiency"] == pytest.approx(2 / 3)


def test_stops_paying_and_the_talks_numbers():
    # t_ar(k) = 0.01*2(k-1)/k; efficiency >= 0.9 needs exposed <= 0.1/9: k=2 gives 0.01, k=3 0.0133
    assert scaling.stops_paying(0.1, 1e7, 1e9, min_efficiency=0.9) == 2
    assert scaling.stops_paying(0.1, 1e7, 1e9, overlap=1.0) == scaling.K_MAX
    # the talk: batch 640, 17,000 -> 50,000 samples/s on 4 GPUs
    assert scaling.measured_efficiency(17_000, 50_000, 4) == pytest.approx(50 / 68)
    exposed = scaling.implied_exposed_time(17_000, 50_000, 4, 640)
    assert exposed == pytest.approx(4 * 640 / 50_000 - 640 / 17_000)
    assert scaling.implied_busbw(17_000, 50_000, 4, 640, 1e6) == pytest.approx(1.5e6 / exposed)
    assert math.isinf(scaling.implied_busbw(100, 400, 4, 64, 1e6))


def test_bus_bandwidth_and_overlap_from_steps():
    assert scaling.bus_bandwidth(1e9, 1.0, 2) == pytest.approx(1e9)
    assert scaling.bus_bandwidth(1e9, 1.0, 4) == pytest.approx(1.5e9)
    assert scaling.overlap_from_steps(0.13, 0.10, 0.06) == pytest.approx(0.5)
    assert scaling.overlap_from_steps(0.09, 0.10, 0.06) == 1.0   # noise: faster with sync
    assert scaling.overlap_from_steps(0.30, 0.10, 0.06) == 0.0
    with pytest.raises(ValueError, match="overlap"):
        scaling.predict([2], 0.1, 1e6, 1e9, overlap=1.5)
