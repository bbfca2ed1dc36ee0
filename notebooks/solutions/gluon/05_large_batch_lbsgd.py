"""Solutions of lesson 05's exercises (Gluon): each section is the exercise cell, solved.
`gc.solution("05.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 05.1
ex = gc.Experiment(name="exercise", graph="static-alloc", **SIZES.replace(train_size=SIZES.exercise_size),
                   dtype="float16" if gc.gpu_count() else "float32")
size = SIZES.batches[1]      # >>> the sweep's second; on a GPU, double it until it no longer fits
guess = "faster" if gc.gpu_count() else "same"   # >>> a GPU fills up with the larger batch;
# a CPU's cores are busy at the small one already (×0.78 to ×1.71 on the course's 2 cores:
# the check reports a CPU's verdict untested)
tried = []
for b in dict.fromkeys((SIZES.batches[0], size)):   # the small batch, then yours
    tried.append(gc.train(ex.replace(name=f"exercise: batch {b}", batch_size=b), verbose=False))   # <-
