"""Solutions of lesson 04's exercises (Gluon): each section is the exercise cell, solved.
`gc.solution("04.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 04.1
ex = gc.Experiment(name="exercise", graph="static-alloc", batch_size=SIZES.exercise_batch,
                   **SIZES.replace(train_size=SIZES.exercise_size))
low = "float16" if gc.gpu_count() else "bfloat16"   # >>> MXNet's 16-bit type: float16 on a GPU, bfloat16 on a CPU with AVX-512
guess = "faster" if gc.gpu_count() else "slower"     # >>> tensor cores on a GPU; on a CPU MXNet 1.9's oneDNN
                                                    # runs bfloat16 slower than float32 (casts, and no AMX kernels)
tried = [gc.train(ex.replace(name=f"exercise: {dtype}", dtype=dtype), verbose=False)   # <- the precision
         for dtype in dict.fromkeys(("float32", low))]
