"""Solutions of lesson 01's exercises (PyTorch): each section is the exercise cell, solved.
`gc.solution("01.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 01.1
ex_cfg = gc.Experiment(name="exercise", model=SIZES.exercise_model, batch_size=64, dtype="float32",
                       graph="eager", **SIZES.replace(train_size=SIZES.exercise_size))
ex_set, _ = gc.load_datasets(ex_cfg)
workers = 0                  # >>> the training process prepares each batch itself
prediction = "more"          # >>> the loading one worker did alongside now happens inside each step
mine = []
for n in dict.fromkeys((1, workers)):   # 1 worker, then yours (once if the same)
    loader = DataLoader(ex_set, batch_size=64, shuffle=True, drop_last=True, num_workers=n)   # <-
    mine.append(gc.train(ex_cfg.replace(name=f"exercise: num_workers={n}", num_workers=n),
                         net=gc.get_model(ex_cfg), train_iter=loader, verbose=False))
