"""Solutions of lesson 11's exercises (Gluon): each section is the exercise cell, solved.
`gc.solution("11.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 11.1
cpu = env.cpu_facts()
threads = 1                  # >>> one thread: no OpenMP region waits for another thread
prediction = "faster"        # >>> the course's 2-core CPU trained ×1.5 faster with one thread than two (gpu_course/ladder.py)
tried = [env.bench("gluon", n, **SIZES.bench)                    # <- OMP_NUM_THREADS=n, a fresh process
         for n in (cpu["usable"], threads) if threads]           # (nothing until you choose)
