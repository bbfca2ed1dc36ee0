"""One engine for every lesson's closing sentences: a lesson declares as data what it compares
and what each outcome means (`declarations`); `judge` judges each comparison against noise and
words it through the fixed templates of `wording`, so every number printed is cited."""
from .declarations import (Ceilings, Column, Compare, Context, Expect, Flag, Gain, Lesson, Limit,
                           Mark, Metric, Note, Outcome, Place, Quote, Rank, Reading, Requires,
                           Row, Samples, Sign, Text, Versus, Where)
from ...page import Page
from .judging import Said, judge, judge_table, outcome
from .predicting import DRIFT, Predict, apart, called, predicted, untested
from .reading import read
from .rows import judge_rows
from .wording import CHANCE
