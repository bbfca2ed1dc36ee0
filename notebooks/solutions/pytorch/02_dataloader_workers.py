"""Solutions of lesson 02's exercises (PyTorch): each section is the exercise cell, solved,
and, after `# %% check`, its check cell. `gc.solution("02.1")` prints one; the tests run
each in the notebook's place."""

# %% exercise 02.1
sweep_cfg = gc.Experiment(name="exercise", model=SIZES.exercise_model, batch_size=64,
                          **SIZES.replace(train_size=SIZES.exercise_size))
sweep_set, _ = gc.load_datasets(sweep_cfg)
counts = sorted({0, 1, 2, gc.workers()})   # >>> none, one, two, the talk's advice
mine = []
for n in counts:
    loader = DataLoader(sweep_set, batch_size=64, shuffle=True, drop_last=True, num_workers=n)   # <-
    mine.append(gc.train(sweep_cfg.replace(name=f"exercise: num_workers={n}", num_workers=n),
                         net=gc.get_model(sweep_cfg), train_iter=loader, verbose=False))

# %% check
gc.show(mine, lesson="02", chart=False)
rates = {r.config["num_workers"]: gc.metrics.samples_per_sec(r) for r in mine}   # the table's column
knee = min(n for n, rate in rates.items() if rate >= 0.9 * max(rates.values()))   # >>> within 10 % of the best
gc.check("02.1", mine, knee)
