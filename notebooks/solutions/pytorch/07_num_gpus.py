"""Solutions of lesson 07's exercises (PyTorch): each section is the exercise cell, solved.
`gc.solution("07.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 07.1
plan = lesson.plan("pytorch", gc.gpu_count(), usable_cores(), SIZES)
few = plan.exercise_sizes    # the batch a step to split, the images
ex_cfg = gc.Experiment(name="exercise", pin_memory=plan.on_gpu, threads=plan.threads, **few)
k = 2                        # >>> two processes: half the batch each
prediction = "faster"        # >>> on GPUs, half the work a step each, the all-reduce small beside it;
                             # on a CPU two processes of plan.threads threads use twice the cores of one
mine = [gc.train(ex_cfg.replace(name=f"exercise: {n} process(es)", num_gpus=n, num_workers=loader_workers(k),
                                batch_size=few.batch_size // n),   # <- a share each
                 devices=plan.devices(n), verbose=False)
        for n in dict.fromkeys((1, k))]
