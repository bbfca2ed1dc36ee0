"""Solutions of lesson 08's exercises (PyTorch): each section is the exercise cell, solved.
`gc.solution("08.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 08.1
rungs = lesson.exercise_ladder("pytorch", SIZES, gc.gpu_count())   # {rung: its Experiment}, in order
top = list(rungs.values())[-1]                                      # every rung on
mine = top.replace(data_format=rungs["workers"].data_format)   # >>> the data-format rung out (a CPU ladder):
# loose JPEGs again, each opened, decoded and resized per sample by the loader's workers
prediction = "slower"        # >>> the rungs above data-format do not touch the decoding it removed:
# back in the step, it costs what it cost in the ladder, or more (the network got faster since)
tried = [gc.train(cfg, verbose=False) for cfg in (top, mine.replace(name="exercise: one rung out"))] \
    if mine != top else []
