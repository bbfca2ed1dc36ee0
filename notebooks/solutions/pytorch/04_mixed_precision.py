"""Solutions of lesson 04's exercises (PyTorch): each section is the exercise cell, solved.
`gc.solution("04.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 04.1
ex_cfg = gc.Experiment(name="exercise", batch_size=SIZES.exercise_batch, threads=SIZES.torch_threads,
                       pin_memory=gc.gpu_count() > 0, **SIZES.replace(train_size=SIZES.exercise_size))
low = "bfloat16"             # >>> float32's range, no GradScaler; the 16-bit type a CPU has too
bf16_units = gc.cpu.supports(gc.cpu.Capability.BFLOAT16_INSTRUCTIONS)   # the CPU's bfloat16 instructions (gpu-course env)
prediction = "faster" if gc.gpu_count() or bf16_units else "slower"   # >>> tensor cores, or those instructions;
                                                                     # else each cast costs more than it saves
mine = [gc.train(ex_cfg.replace(name=f"exercise: {dtype}", dtype=dtype), verbose=False)   # <- the precision
        for dtype in dict.fromkeys(("float32", low))]
