"""Ctrl-C at random moments of real runs: a real SIGINT to the process group (loader
workers included, as a terminal and Jupyter send it). Every run must end within
seconds, its record interrupted, its workers ended, the SIGINT handler back, and the
command's status must be 130. A few trials here; `python -m tools.ctrl_c --engine E
--trials 50` runs fifty."""
import importlib.util
import random

import pytest

from tools.ctrl_c import trials

ENGINES = [e for e, module in (("gluon", "mxnet"), ("pytorch", "torch"))
           if importlib.util.find_spec(module)]


@pytest.mark.parametrize("engine", ENGINES)
def test_ctrl_c_at_a_random_moment_ends_the_run_as_interrupted(engine):
    seed = random.randrange(10_000)   # other moments each time; the seed repeats them
    done = trials(engine, 5, per_process=5, seed=seed, log=lambda line: None)
    lines = "\n".join(t.line(i) for i, t in enumerate(done))
    assert len(done) == 5 and not any(t.problems for t in done), f"seed {seed}:\n{lines}"
