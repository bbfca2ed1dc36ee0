"""Test helper: every paragraph a lesson declares, to check that none carries a number."""
from gpu_course.show.findings import Lesson, Reading


def paragraphs(lesson: Lesson | Reading) -> list[str]:
    """Every paragraph `lesson` declares, each track's and place's."""
    if isinstance(lesson, Reading):
        texts = [lesson.text, [m.text for m in lesson.marks], [x.text for x in lesson.limits],
                 [lesson.empty]]
    else:
        compares = lesson.compares + ((lesson.bounds,) if lesson.bounds else ())
        texts = [lesson.bound.values(), [lesson.cpu, lesson.empty, lesson.above_ceiling,
                                         lesson.after], [n.text for n in lesson.notes],
                 lesson.missing.values(), lesson.facts.values(),
                 [c.worse for c in lesson.compares], [x.text for x in lesson.limits],
                 lesson.ceilings.means.values() if lesson.ceilings else ()]
        texts += [c.means.values() for c in compares] + [c.gained.values() for c in compares]
        texts += [m.values() for m in lesson.by_sign.values()]
        texts += [r.means.values() for c in lesson.compares for r in c.ranks]
        texts += [f.means.values() for f in lesson.flags]
        texts += [[r.has, r.lacks] for r in lesson.requires]
    texts += [[c.present, c.missing] for c in lesson.about]
    out = [t for group in texts for text in group
           for t in ([text] if isinstance(text, str) else text.values())]
    return [t for t in out if t]
