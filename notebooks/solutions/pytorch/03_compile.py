"""Solutions of lesson 03's exercises (PyTorch): each section is the exercise cell, solved.
`gc.solution("03.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 03.1
ex_cfg = gc.Experiment(name="exercise", model=SIZES.exercise_model, batch_size=64,
                       num_workers=gc.workers(), **SIZES.replace(train_size=SIZES.exercise_size))
ex_train, ex_val = gc.load_data(ex_cfg)
eager = gc.get_model(ex_cfg)
compiled = torch.compile(gc.get_model(ex_cfg), backend=SIZES.compile_backend)   # >>> fused kernels
prediction = "faster"        # >>> inductor fuses the operators and drops Python around them
mine = [gc.train(ex_cfg.replace(name=f"exercise: {ex_cfg.model} {label}"), net=net,
                 train_iter=ex_train, val_iter=ex_val, verbose=False)
        for label, net in (("eager", eager), ("compiled", compiled)) if net is not None]
