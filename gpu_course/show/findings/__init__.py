"""One engine for every lesson's closing sentences. A lesson declares as data what it
compares and what each outcome means (`declarations`); `judge` groups the runs, judges each
comparison against noise (refusing runs that differ in more than it names, or ran otherwise
than asked) and words it through the fixed templates of `wording`, so every number printed
is cited. `judge_rows` and `judge_table` judge tables that are not one row a run, `read` a
table that holds no runs, `predicting` an attendee's prediction."""
from .declarations import (Ceilings, Column, Compare, Context, Expect, Flag, Gain, Lesson, Limit,
                           Mark, Metric, Note, Outcome, Place, Quote, Rank, Reading, Requires,
                           Row, Samples, Sign, Text, Versus, Where, paragraphs)
from ...page import Page
from .judging import Said, accuracy_outcome, judge, judge_table, outcome
from .predicting import DRIFT, Predict, apart, called, predicted, untested
from .reading import read
from .rows import judge_rows
from .wording import ASKED, CHANCE, COLUMN, NOTICE, ROW

__all__ = ["ASKED", "CHANCE", "COLUMN", "Ceilings", "Column", "Compare", "Context", "DRIFT",
           "Expect", "Flag", "Gain", "Lesson", "Limit", "Mark", "Metric", "NOTICE", "Note",
           "Outcome", "Page", "Place", "Predict", "Quote", "ROW", "Rank", "Reading", "Requires", "Row",
           "Said", "Samples", "Sign", "Text", "Versus", "Where", "accuracy_outcome", "apart",
           "called", "judge", "judge_rows", "judge_table", "outcome", "paragraphs", "predicted",
           "read", "untested"]
