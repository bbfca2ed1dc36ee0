"""Solutions of lesson 03's exercises (Gluon): each section is the exercise cell, solved.
`gc.solution("03.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 03.1
few = SIZES.replace(train_size=SIZES.exercise_size)   # fewer images than the lesson
ex = gc.Experiment(name="exercise", model=SIZES.exercise_model, batch_size=64,
                   num_workers=gc.workers(), **few)
ex_train, ex_val = gc.load_data(ex)
imperative = gc.get_model(ex)
graph = gc.get_model(ex)     # >>> hybridize this copy
graph.hybridize(static_alloc=True, static_shape=True)
guess = "faster"             # >>> many small operators: Python's share of each step is large
tried = [gc.train(ex.replace(name=f"exercise: {ex.model} {label}"), net=net, train_iter=ex_train,
                  val_iter=ex_val, verbose=False)
         for label, net in (("imperative", imperative), ("hybridized", graph))]
