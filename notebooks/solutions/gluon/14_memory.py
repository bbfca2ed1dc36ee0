"""Solutions of lesson 14's exercises (Gluon): each section is the exercise cell, solved.
`gc.solution("14.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 14.1
ex = gc.Experiment(name="exercise", max_steps=SIZES.sweep_steps, **SIZES)
measured = SIZES.batches[-1]
first = gc.memory_run(ex.replace(name=f"exercise: batch {measured}", batch_size=measured), SIZES.readings)
gc.show([first], lesson="14", chart=False)
batch = 2 * measured           # >>> twice the batch above
was = gc.memory_of(first)      # what the first run held between steps, and its activations an image (MiB)
prediction = was.held_mib + was.per_image_mib * batch   # >>> what stays, plus what grows with each image
mine = gc.memory_run(ex.replace(name=f"exercise: batch {batch}", batch_size=batch), SIZES.readings)
