"""Solutions of lesson 11's exercises (Gluon): each section is the exercise cell, solved.
`gc.solution("11.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 11.1
cpu = env.cpu_facts()
threads = 1                  # >>> one thread: the other cores sit idle in every operator
prediction = "slower"        # >>> on a quiet machine (the course's 2 cores: ×0.41); while other programs run, a pool with a thread a core waits for them
tried = [env.bench("gluon", n, **SIZES.bench)                    # <- OMP_NUM_THREADS=n, a fresh process
         for n in (cpu["usable"], threads) if threads]           # (nothing until you choose)
