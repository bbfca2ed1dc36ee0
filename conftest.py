"""The notebooks' own test (nbval, `make test`): an exercise as shipped must not pass.

Each exercise's check cell (tagged "check") runs in the notebook's run with the attendee's
lines untouched; its Result must say "not yet", with why. tests/test_exercise_cells.py runs
each exercise again with its solution in place and asserts that it passes, or that only
what the machine measured refuses it (Result.measured)."""

NOT_YET = ", not yet: "   # how a Result that did not pass reads (gpu_course.lessons.exercises)


def _text(outputs) -> str:
    parts = []
    for out in outputs or []:
        parts.append(out.get("text", "") if isinstance(out.get("text"), str) else "")
        parts.append(str((out.get("data") or {}).get("text/plain", "")))
    return "\n".join(parts)


def _shipped_check_fails(runtest, item):
    def run():
        runtest()
        said = _text(getattr(item, "test_outputs", None))
        if NOT_YET not in said or not said.split(NOT_YET, 1)[1].strip():
            raise AssertionError(f"{item.name}: the check of an untouched exercise must say "
                                 f"'not yet' and why; it said:\n{said[-2000:] or '(nothing)'}")
    return run


def pytest_collection_modifyitems(items):
    for item in items:
        cell = getattr(item, "cell", None)   # nbval's notebook cells carry theirs
        if cell is not None and "check" in cell.get("metadata", {}).get("tags", []):
            item.runtest = _shipped_check_fails(item.runtest, item)
