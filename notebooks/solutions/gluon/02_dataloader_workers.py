"""Solutions of lesson 02's exercises (Gluon): each section is the exercise cell, solved,
and, after `# %% check`, its check cell. `gc.solution("02.1")` prints one; the tests run
each in the notebook's place."""

# %% exercise 02.1
few = SIZES.replace(train_size=SIZES.exercise_size)   # fewer images than the lesson
ex = gc.Experiment(name="exercise", model=SIZES.exercise_model, batch_size=64, **few)
images, _ = gc.load_datasets(ex)
processes = sorted({0, 1, 2, gc.workers()})   # >>> none, one, two and the talk's advice
tried = []
for n in processes:
    batches = gluon.data.DataLoader(images, batch_size=64, shuffle=True, last_batch="discard",
                                    num_workers=n)                       # <-
    tried.append(gc.train(ex.replace(name=f"exercise: {n} loader process(es)", num_workers=n),
                          net=gc.get_model(ex), train_iter=batches, verbose=False))

# %% check
gc.show(tried, lesson="02", chart=False)
speed = {r.config["num_workers"]: gc.metrics.samples_per_sec(r) for r in tried}   # samples_per_sec
knee = min(n for n in speed if speed[n] >= 0.9 * max(speed.values()))   # >>> the fewest within 10 % of the fastest
gc.check("02.1", tried, knee)
