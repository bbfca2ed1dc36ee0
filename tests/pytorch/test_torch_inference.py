"""Lesson 15's PyTorch measurement: records of batch 1 one request at a time and a larger
batch, the outputs on the probe images, the same seeded weights in a fresh process with
oneDNN off (a real subprocess, env.infer), and on a GPU the CUDA-event timings."""
import numpy as np
import pytest
import torch

from gpu_course.env import report as env
from gpu_course.analyse import inference
from gpu_course.measure.timing import Workload
from gpu_course.tracks.torch import envinfo
from gpu_course.tracks.torch.inference import (back_to_back, inference_net, one_at_a_time,
                                               time_inference)


def test_records_of_batch_1_and_a_larger_batch_with_outputs_at_the_largest():
    net = inference_net("tiny")
    records = time_inference(net, "tiny", "oneDNN on", "cpu", Workload((1, 4), 6, 8, 1))
    one, four = records
    assert (one["batch"], len(one["pass_s"]), one["outputs"]) == (1, 6, None)
    assert four["batch"] == 4 and len(four["pass_s"]) == inference.MIN_PASSES   # 8 images: still 5 passes
    assert one["timing"] == four["timing"] == "alone" and four["dtype"] == "float32"
    expected = net(torch.from_numpy(inference.probe_images(4))).detach().numpy()
    assert np.allclose(four["outputs"], expected, rtol=1e-5, atol=1e-6)
    assert list(inference.table(records)["rung"]) == ["tiny, oneDNN on, batch 1", "tiny, oneDNN on, batch 4"]


def test_a_function_that_returns_numpy_is_served_too():
    net = inference_net("tiny")
    records = time_inference(lambda x: net(x).numpy(), "tiny", "ONNX Runtime", "cpu",
                             Workload((1, 2), 5, 2, 1))
    assert np.asarray(records[1]["outputs"]).shape == (2, 10)


def test_a_fresh_process_with_onednn_off_serves_the_same_weights():
    off = env.infer("pytorch", "tiny", Workload((1, 4), 5, 8, 1), onednn=False, threads=1)
    assert [r["variant"] for r in off] == ["oneDNN off", "oneDNN off"]
    assert off[0]["load_average"] >= 0 and off[0]["threads"] == 1
    on = envinfo.infer(1, True, ["tiny"], Workload((1, 4), 5, 8, 1))["records"]
    frame = inference.table(off + on)
    assert frame["max_rel_diff"].iloc[3] <= inference.TOLERANCE["float32"]
    assert frame["top1_same"].iloc[3] == 1.0


@pytest.mark.gpu
def test_on_a_gpu_events_time_each_request_and_each_queued_pass():
    net = inference_net("tiny", "cuda")
    x = torch.from_numpy(inference.probe_images(64)).cuda()
    with torch.inference_mode():
        alone = one_at_a_time(net, x[:1], 5)
        queued = back_to_back(net, x, 5)
    assert len(alone) == len(queued) == 5 and min(alone + queued) > 0
    workload = Workload((1, 64), 5, 64, 1)
    records = time_inference(net, "tiny", "eager", "cuda", workload)
    assert [r["timing"] for r in records] == ["alone", "queued"] and inference.on_gpu(records[0])
    half = time_inference(inference_net("tiny", "cuda").to(torch.bfloat16), "tiny", "bfloat16",
                          "cuda", workload, dtype=torch.bfloat16)
    frame = inference.table(records + half)
    assert half[1]["dtype"] == "bfloat16" and frame["max_rel_diff"].iloc[3] <= inference.TOLERANCE["bfloat16"]
