"""Solutions of lesson 05's exercises (PyTorch): each section is the exercise cell, solved.
`gc.solution("05.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 05.1
ex_cfg = gc.Experiment(name="exercise", pin_memory=gc.gpu_count() > 0,
                       **SIZES.replace(train_size=SIZES.exercise_size))
batch = SIZES.batches[1]     # >>> the sweep's second; on a GPU, keep doubling until it no longer fits
prediction = "faster"        # >>> fewer, larger steps: the per-step overhead is paid less often
mine = [gc.train(ex_cfg.replace(name=f"exercise: batch {b}", batch_size=b), verbose=False)   # <- the batch
        for b in dict.fromkeys((SIZES.batches[0], batch))]
