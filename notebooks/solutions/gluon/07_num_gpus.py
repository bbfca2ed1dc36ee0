"""Solutions of lesson 07's exercises (Gluon): each section is the exercise cell, solved.
`gc.solution("07.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 07.1
plan = lesson.plan("gluon", gc.gpu_count(), usable_cores(), SIZES)
context = mx.gpu if plan.on_gpu else mx.cpu
few = plan.exercise_sizes    # the batch a step to split, the images
ex = gc.Experiment(name="exercise", graph="static-alloc", dtype="float16" if plan.on_gpu else "float32",
                   num_workers=loader_workers(1), **few)
k = 2                        # >>> two GPUs (or CPU contexts): half the batch each
guess = "faster" if plan.on_gpu else "slower"   # >>> GPUs: half the work a step each, the exchange small
                                                # beside it; CPU contexts: the same cores, twice the calls
tried = [gc.train(ex.replace(name=f"exercise: {n} device(s)", num_gpus=n, batch_size=few.batch_size // n),  # <- a share each
                  devices=[context(i) for i in range(n)], verbose=False)
         for n in dict.fromkeys((1, k))]
