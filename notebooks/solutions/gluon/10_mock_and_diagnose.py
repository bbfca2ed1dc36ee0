"""Solutions of lesson 10's exercises (Gluon): each section is the exercise cell, solved.
`gc.solution("10.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 10.1
job = gc.Experiment(name="exercise", model="tiny", augment="standard", data_format="memory", num_workers=1,
                    data_dir=str(l09_input.photo_folder(SIZES.images, FOLDER)),
                    **SIZES.replace(train_size=SIZES.exercise_size, batch_size=SIZES.exercise_batch))
mine = job.replace(data_format="loose")   # >>> every photo opened, decoded and resized per sample, by one worker
verdict = "input-bound"      # >>> the tiny network waits on one worker decoding photos
tried = []
if mine != job:                                         # the job as it is, yours, and its two ceilings
    yours = mine.replace(name="exercise, changed")
    tried += [gc.train(job, verbose=False), gc.train(yours, verbose=False)]
    for mock in ("trainer", "loader"):
        tried.append(gc.train(yours.replace(name=f"{yours.name}: mock {mock}", mock=mock),   # <- one flag
                              verbose=False))
