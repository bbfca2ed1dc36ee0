"""Solutions of lesson 06's exercises (Gluon): each section is the exercise cell, solved,
and, after `# %% check`, its check cell. `gc.solution("06.1")` prints one; the tests run
each in the notebook's place."""

# %% exercise 06.1
ex = gc.Experiment(name="exercise", graph="static-alloc", warmup_epochs=1.0, **SIZES,
                   dtype="float16" if gc.gpu_count() else "float32")
raced = ["none", "cosine", "poly"]   # >>> the constant rate first, then two decaying schedulers
tried = []
for name in raced:
    tried.append(gc.train(ex.replace(name=f"exercise: {name}", lr_scheduler=name), verbose=False))   # <-

# %% check
display(gc.plots.curves(tried))
goal = gc.metrics.val_acc(tried[0])               # where the constant rate ended
epochs_to_goal = {r.config["lr_scheduler"]: list(r.epochs["val_acc"] >= goal).index(True)
                  for r in tried if (r.epochs["val_acc"] >= goal).any()}
first = min(epochs_to_goal, key=epochs_to_goal.get)   # >>> the fewest epochs to the constant rate's accuracy
gc.check("06.1", tried, first)
