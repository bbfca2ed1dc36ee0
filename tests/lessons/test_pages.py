"""Lessons' paragraphs kept as Markdown pages (`findings.Page`): the format, its errors, and
every page's sections said by some declaration."""
import importlib
from enum import StrEnum
from pathlib import Path

import pytest

import gpu_course
from gpu_course import cli
from gpu_course.show.findings import Outcome, Page, Where

PAGE = """# Lesson 99: a title the parser skips
<!-- a comment -->
## alone
One paragraph
on two lines.

## means
- expected, gpu: Faster on a GPU,
  for a reason.
- expected, cpu: = alone
- none: Nothing here.
- cannot judge, pytorch, gpu: Only there.
"""


def page(tmp_path, text):
    path = tmp_path / "l99_test.md"
    path.write_text(text)
    return Page(path)


def test_a_section_is_a_paragraph_or_paragraphs_by_outcome_and_place(tmp_path):
    p = page(tmp_path, PAGE)
    assert p.text("alone") == "One paragraph on two lines."
    assert p.means("means") == {
        Outcome.EXPECTED: {Where.GPU: "Faster on a GPU, for a reason.",
                           Where.CPU: "One paragraph on two lines."},
        Outcome.NONE: "Nothing here.",
        Outcome.CANNOT_JUDGE: {("pytorch", Where.GPU): "Only there."}}
    assert p.unread() == []


def test_an_enum_key_is_its_value_or_its_members_name_for_a_value_with_a_colon(tmp_path):
    class Kind(StrEnum):
        PLAIN = "plain"
        COLON = "held: by a colon, and a comma"

    p = page(tmp_path, "## a\n- plain: One.\n- colon: Two.\n")
    assert p.means("a", Kind) == {Kind.PLAIN: "One.", Kind.COLON: "Two."}
    with pytest.raises(ValueError, match="'held' is not one of 'plain'"):
        page(tmp_path, "## a\n- held: by a colon: Three.\n").means("a", Kind)


@pytest.mark.parametrize("text, call, message", [
    ("## a\n- sometimes: x\n", ("means", "a"), "'sometimes' is not one of 'expected'"),
    ("## a\n- none: x\n- none: y\n", ("means", "a"), "'none' twice"),
    ("## a\n- none: x\n- none, gpu: y\n", ("means", "a"), "both everywhere and for one place"),
    ("## a\n- none: x\nloose\n", ("means", "a"), "'loose' is neither"),
    ("## a\n- none: x\n", ("text", "a"), "is a list"),
    ("## a\nx\n", ("text", "b"), "has no section 'b'; it has: a"),
])
def test_a_malformed_page_is_refused_naming_the_file_section_and_line(tmp_path, text, call,
                                                                      message):
    p = page(tmp_path, text)
    with pytest.raises((ValueError, KeyError), match=message):
        getattr(p, call[0])(call[1])


@pytest.mark.parametrize("text, message", [("before\n## a\nx\n", "before the first"),
                                           ("## a\nx\n## a\ny\n", "section 'a' twice")])
def test_a_page_with_text_outside_a_section_or_a_section_twice_is_refused(tmp_path, text,
                                                                          message):
    with pytest.raises(ValueError, match=message):
        page(tmp_path, text)


PACKAGE = Path(gpu_course.__file__).parent


@pytest.mark.parametrize("page", sorted(p.relative_to(PACKAGE).as_posix()
                                        for p in PACKAGE.glob("**/text/*.md")))
def test_every_page_is_said_whole_by_its_module(page):
    """A section no module reads is text the course keeps and never says: text/<module>.md
    is read whole by <module> once imported (the command line's, once its parser is built)."""
    *folder, _, name = page[:-len(".md")].split("/")
    module = importlib.import_module(".".join(["gpu_course", *folder, name]))
    if module is cli:
        cli.build_parser()
    assert module.PAGE.unread() == [], page
