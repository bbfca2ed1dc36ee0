"""One engine for every lesson's closing sentences.

A lesson declares, as data, what it compares and what each outcome means (`declarations`);
`judge` reads the runs' records, judges each comparison and words it through the few fixed
templates of `wording`, so every number printed is cited by construction (`closing.Closing`
checks it once more). For every lesson, the same way, the engine:
- groups the runs (`grouping`): repeats share a name; `group_by` keeps each group against
  its own baseline (`chain`: each run against the one before; `pairs`: two variants that
  differ in one setting against each other);
- tells asked from ran (`metrics.ran_as`): a variant that ran as its baseline did is two
  identical jobs, never the change;
- refuses a verdict across runs that differ in more than the comparison names (the
  machine's load among them: `noise.compare`), and on too few steady steps;
- maps the verdict to an `Outcome` against what the lesson expects on a GPU or a CPU and
  says that outcome's paragraph once; the same for accuracy (`Gain`);
- adds the generic caveats once: a baseline that waited for its data, every run's accuracy
  at chance, a machine another program shared, no GPU; and the talk's figures;
- reads mock runs as a run's ceilings, never as variants.
`judge_table` and `judge_rows` (`rows`) judge tables that are not one row a run, `read`
(`reading`) a table that holds no runs, and `predicting` an attendee's prediction.
"""
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
