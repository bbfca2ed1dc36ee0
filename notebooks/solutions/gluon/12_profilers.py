"""Solutions of lesson 12's exercises (Gluon): each section is the exercise cell, solved.
`gc.solution("12.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 12.1
ex_cfg = gc.Experiment(name="exercise", num_workers=1, **SIZES)
change = {"num_workers": 0}  # >>> the training process loads each batch itself, between steps
verdict = "input-bound"      # >>> its transforms are MXNet operators: fetching a batch waits for the engine's queued step (lesson 13)
mine = [gc.train(ex_cfg.replace(name=f"exercise: {c or 'as profiled'}", **c), verbose=False, progress=False)
        for c in ({}, change) if change]                 # (nothing until you choose)
