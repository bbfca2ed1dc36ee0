"""Solutions of lesson 15's exercises (PyTorch): each section is the exercise cell, solved,
and, after `# %% check`, its check cell. `gc.solution("15.1")` prints one; the tests run
each in the notebook's place."""

# %% exercise 15.1
torch.set_num_threads(SIZES.threads or torch.get_num_threads())   # as the lesson's processes
net = gc.inference_net(SIZES.exercise_model)
batches = [1, 4, 16, 64]                   # >>> at least three batch sizes, e.g. [1, 4, 16, 64]
mine = gc.time_inference(net, SIZES.exercise_model, "oneDNN on", "cpu", gc.Workload(
    batches=batches, requests=SIZES.requests, images=SIZES.images, warmup=SIZES.warmup))

# %% check
gc.show(mine, lesson="15", chart=False)
import statistics
rates = {r["batch"]: r["batch"] / statistics.median(r["pass_s"]) for r in mine}   # the table's images/s
knee = min(b for b, rate in rates.items() if rate >= 0.9 * max(rates.values()))   # >>> within 10 % of the best
gc.check("15.1", mine, knee)
