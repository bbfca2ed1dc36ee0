"""The lessons' exercises: a change, a prediction, a measurement and its check.

`gc.check("02.1", runs, answer)` judges the runs from their records and returns a `Result`:
passed with a sentence, or "not yet" with what to fix; an answer the runs cannot tell apart is
accepted as untested. base.py: registry and solutions; judge.py: shared checks; exNN.py: lesson NN's."""
from __future__ import annotations

from .base import (EXERCISES, MARK, SOLUTIONS, TRACKS, Contradicted, Exercise, NotYet, Result,
                   check, exercise, find, solution, solution_sections, solution_text)

from . import ex01, ex02, ex03, ex04, ex05, ex06, ex07, ex08, ex09, ex10, ex11, ex12, ex13, ex14, ex15, ex16  # noqa: F401  (registers each lesson's exercises)

__all__ = ["EXERCISES", "MARK", "SOLUTIONS", "TRACKS", "Contradicted", "Exercise", "NotYet",
           "Result", "check", "exercise", "find", "solution", "solution_sections", "solution_text"]
