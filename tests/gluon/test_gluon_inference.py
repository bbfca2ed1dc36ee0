"""Lesson 15's Gluon measurement: records of batch 1 one request at a time and a larger
batch, each pass ended by its own sync, the outputs on the probe images, and the same
seeded weights in a fresh process with oneDNN off (a real subprocess, env.infer)."""
import os

import mxnet as mx
import numpy as np
import pytest

from gpu_course.env import report as env
from gpu_course.analyse import inference
from gpu_course.measure.timing import Workload
from gpu_course.tracks.gluon import envinfo
from gpu_course.tracks.gluon.inference import inference_net, time_inference


def test_records_of_batch_1_and_a_larger_batch_with_outputs_at_the_largest():
    net = inference_net("tiny")
    records = time_inference(net, "tiny", "oneDNN on", mx.cpu(), Workload((1, 4), 6, 8, 1))
    one, four = records
    assert (one["batch"], len(one["pass_s"]), one["outputs"]) == (1, 6, None)
    assert four["batch"] == 4 and len(four["pass_s"]) == inference.MIN_PASSES
    assert one["timing"] == four["timing"] == "alone" and one["device"] == "cpu(0)"
    expected = net(mx.nd.array(inference.probe_images(4))).asnumpy()
    assert np.allclose(four["outputs"], expected, rtol=1e-5, atol=1e-6)


def test_a_fresh_process_with_onednn_off_serves_the_same_weights():
    off = env.infer("gluon", "tiny", Workload((1, 4), 5, 8, 1), onednn=False, threads=1)
    assert [r["variant"] for r in off] == ["oneDNN off", "oneDNN off"] and off[0]["threads"] == 1
    if os.environ.get("MXNET_MKLDNN_ENABLED", "1") == "0":   # what this process started with
        pytest.skip("this process started with oneDNN off: nothing to compare with")
    on = envinfo.infer(1, True, ["tiny"], Workload((1, 4), 5, 8, 1))["records"]
    frame = inference.table(off + on)
    assert frame["max_rel_diff"].iloc[3] <= inference.TOLERANCE["float32"]
    assert frame["top1_same"].iloc[3] == 1.0
