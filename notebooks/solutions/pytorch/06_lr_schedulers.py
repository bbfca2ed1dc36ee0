"""Solutions of lesson 06's exercises (PyTorch): each section is the exercise cell, solved,
and, after `# %% check`, its check cell. `gc.solution("06.1")` prints one; the tests run
each in the notebook's place."""

# %% exercise 06.1
race_cfg = gc.Experiment(name="exercise", warmup_epochs=1.0, **SIZES)
schedules = ["none", "cosine", "poly"]   # >>> the constant rate, then two schedules that decay it
mine = [gc.train(race_cfg.replace(name=f"exercise: lr_scheduler={s}", lr_scheduler=s), verbose=False)   # <-
        for s in schedules]

# %% check
display(gc.plots.curves(mine))
target = gc.metrics.val_acc(mine[0])              # the constant rate's final val acc
at_target = {r.config["lr_scheduler"]: r.epochs["val_acc"] >= target for r in mine}
first = min((s for s in at_target if at_target[s].any()), key=lambda s: at_target[s].idxmax())   # >>> the earliest epoch at the target
gc.check("06.1", mine, first)
