"""Solutions of lesson 09's exercises (PyTorch): each section is the exercise cell, solved.
`gc.solution("09.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 09.1
ex = gc.Experiment(name="exercise", data_dir=str(lesson.photo_folder(SIZES.images, FOLDER)), num_workers=1,
                   threads=SIZES.torch_threads,
                   model="resnet20" if gc.gpu_count() else "tiny",
                   **SIZES.replace(train_size=SIZES.exercise_size, batch_size=SIZES.exercise_batch))
fmt = "memory"               # >>> decoded once into host memory: a sample is a slice, then augmented
guess = "less"               # >>> no file to open, no photo to decode or resize per sample
gc.prepare_data(ex.replace(data_format=fmt))   # once, out of band (nothing to make for loose JPEGs)
tried = [gc.train(ex.replace(name=f"exercise: {f}", data_format=f), verbose=False)   # <- the format
         for f in dict.fromkeys(("loose", fmt))]
