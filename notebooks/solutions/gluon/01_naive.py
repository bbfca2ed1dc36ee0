"""Solutions of lesson 01's exercises (Gluon): each section is the exercise cell, solved.
`gc.solution("01.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 01.1
few = SIZES.replace(train_size=SIZES.exercise_size)   # fewer images than the lesson
ex = gc.Experiment(name="exercise", model=SIZES.exercise_model, batch_size=64, num_workers=1, **few)
images, _ = gc.load_datasets(ex)
count = 0                    # >>> the training loop decodes and augments each batch itself
guess = "more"               # >>> the loop now decodes each batch itself, inside next(batches)
tried = []
for n in dict.fromkeys((1, count)):   # one process, then your count (once if it is 1)
    batches = gluon.data.DataLoader(images, batch_size=64, shuffle=True, last_batch="discard",
                                    num_workers=n)                       # <-
    tried.append(gc.train(ex.replace(name=f"exercise: {n} loader process(es)", num_workers=n),
                          net=gc.get_model(ex), train_iter=batches, verbose=False))
