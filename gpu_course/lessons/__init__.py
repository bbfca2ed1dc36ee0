"""The lessons' own code, one framework-free module a lesson (`l03_graph` for lesson 03): its
`SIZES` (full, smoke, check), `OWN_SIZES` (no Experiment field), maybe `table(runs)`, and its
findings as data (`findings.Lesson`) that `conclude` hands to `show.findings.judge`."""
from __future__ import annotations

import difflib
import enum
import importlib
import math
import numbers
import os
import pkgutil
from types import ModuleType

from ..config import Experiment, smoke_mode

# the Experiment fields a lesson's sizes may set; everything else is the lesson's own
_FIELDS = set(Experiment.__dataclass_fields__)
# sizes every lesson shares unless it says otherwise
COMMON = {"full": {"dataset": "synthetic", "monitor_interval": 0.5},
          "smoke": {"dataset": "synthetic", "monitor_interval": 0.2}}


class SizeMode(str, enum.Enum):
    """How large a lesson runs: FULL, SMOKE (tiny: CI on a CPU) or CHECK (full settings, fewer
    images and epochs: every GPU branch in minutes)."""

    FULL = "full"
    CHECK = "check"
    SMOKE = "smoke"


def size_mode() -> SizeMode:
    """GPU_COURSE_SIZE (full, check or smoke) where it is set, else GPU_COURSE_SMOKE."""
    text = os.environ.get("GPU_COURSE_SIZE", "")
    smoke = smoke_mode()
    if not text.strip():
        return SizeMode.SMOKE if smoke else SizeMode.FULL
    try:
        mode = SizeMode(text.strip().lower())
    except ValueError:
        raise ValueError(f"GPU_COURSE_SIZE={text!r} is not a size; allowed: "
                         + ", ".join(m.value for m in SizeMode)) from None
    if smoke and mode is not SizeMode.SMOKE:
        raise ValueError(f"GPU_COURSE_SIZE={text!r} contradicts "
                         f"GPU_COURSE_SMOKE={os.environ.get('GPU_COURSE_SMOKE')!r}: unset one")
    return mode


def module_of(number) -> ModuleType:
    """The module of lesson `number` ("03", 3 or "l03"): `gpu_course.lessons.l03_*`."""
    key = str(number).lstrip("l").zfill(2)
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith(f"l{key}_"))
    if not key.isdigit() or len(names) != 1:
        known = sorted(m.name[1:3] for m in pkgutil.iter_modules(__path__) if m.name[:1] == "l"
                       and m.name[1:3].isdigit())
        raise ValueError(f"lesson={number!r} is not a lesson; allowed: {', '.join(known)}")
    return importlib.import_module(f"{__name__}.{names[0]}")


class Sizes(dict):
    """A lesson's sizes: the Experiment fields are the dict's items (`**SIZES`), every size an
    attribute (`SIZES.batches`); a name neither a field nor `own` (a typo) is refused."""

    def __init__(self, values: dict, own=()):
        if stray := sorted(set(values) - _FIELDS - set(own)):
            near = {n: difflib.get_close_matches(n, _FIELDS | set(own), 1) for n in stray}
            raise ValueError(
                "size(s) " + ", ".join(n + (f" (did you mean {near[n][0]}?)" if near[n] else "")
                                       for n in stray)
                + ": neither an Experiment field nor one of the lesson's own sizes (OWN_SIZES: "
                + (", ".join(own) or "none") + ")")
        self._all, self._own = dict(values), tuple(own)
        super().__init__({k: v for k, v in values.items() if k in _FIELDS})

    def __getattr__(self, name):
        try:
            return self.__dict__["_all"][name]
        except KeyError:
            has = ", ".join(sorted(self.__dict__["_all"]))
            raise AttributeError(f"this lesson has no size {name!r}; it has: {has}") from None

    def __repr__(self) -> str:
        return "Sizes(" + ", ".join(f"{k}={v!r}" for k, v in self._all.items()) + ")"

    def replace(self, **changes) -> "Sizes":
        if unknown := sorted(set(changes) - set(self._all)):
            raise ValueError(f"{', '.join(unknown)}: not a size of this lesson; "
                             f"allowed: {', '.join(sorted(self._all))}")
        for name, value in changes.items():
            _same_kind(name, self._all[name], value)
        return Sizes({**self._all, **changes}, self._own)


def _same_kind(name: str, old, new) -> None:
    """A size changed to a value of its kind (a count a whole number >= 0, ...), else an error."""
    if old is None:
        return   # unset by default: what it takes is the Experiment's to check
    number = isinstance(new, numbers.Real) and not isinstance(new, bool) and 0 <= new < math.inf
    ok, kind = next((ok, kind) for is_old, ok, kind in (
        (isinstance(old, bool), isinstance(new, bool), "True or False"),
        (isinstance(old, int), number and isinstance(new, numbers.Integral), "a whole number >= 0"),
        (isinstance(old, float), number, "a finite number >= 0"),
        (isinstance(old, (tuple, list)), isinstance(new, (tuple, list)), "a tuple"),
        (True, isinstance(new, type(old)), f"a {type(old).__name__}")) if is_old)
    if not ok:
        raise ValueError(f"{name}={new!r}: allowed: {kind} (as given: {old!r})")


def sizes(number, smoke: bool | None = None, mode: SizeMode | None = None,
          **changes) -> Sizes:
    """Lesson `number`'s sizes in the environment's `size_mode` (or `smoke`'s or `mode`'s);
    `changes` override any size (`gc.sizes("03", epochs=5)`)."""
    module = module_of(number)
    table = module.SIZES
    if mode is None:
        mode = size_mode() if smoke is None else SizeMode.SMOKE if smoke else SizeMode.FULL
    mode = SizeMode(mode)
    check = mode is SizeMode.CHECK   # the full sizes, with the check's changes
    base = "full" if check else mode.value
    values = {**COMMON[base], **table[base], **(table["check"] if check else {})}
    return Sizes(values, module.OWN_SIZES).replace(**changes)


def workers() -> int:
    """DataLoader workers for one training process: lesson 02's advice, all the cores but
    three (training, its helpers, the monitor), at least 2."""
    return max(2, (os.cpu_count() or 1) - 3)


def show(runs=None, lesson=None, chart: bool = True, **context) -> None:
    """The runs' table (the `lesson`'s own, else the ladder table), their throughput chart and
    the lesson's `caption(runs)`; context: what else its table is made of (lesson 12's kernels=)."""
    from ..show import plots, report, tables
    module = module_of(lesson) if lesson is not None else None
    frame = module.table(runs, **context) if hasattr(module, "table") else report.ladder_table(runs)
    _display(tables.show(frame))
    if chart and runs:
        _display(plots.throughput(runs))
    if caption := hasattr(module, "caption") and module.caption(runs):
        print(caption)


def conclude(number, runs=None, **context):
    """Lesson `number`'s closing sentences on `runs` or other measurements by name (lesson 13's
    trap=); the first time in a session, where its copy run on a GPU is."""
    module_of(number).conclude(runs, **context)
    _point_to_executed_copy(number, runs)


_POINTED: set = set()


def _point_to_executed_copy(number, runs) -> None:
    from ..show.report import REFERENCE_ROOT, executed_copies
    engines = {getattr(r, "meta", {}).get("engine") for r in _flat(runs)} - {None}
    lesson = module_of(number).__name__.rsplit(".", 1)[1][1:3]   # l03_graph -> 03
    if len(engines) != 1 or (*engines, lesson) in _POINTED:
        return
    _POINTED.add((*engines, lesson))
    for device, path in executed_copies(*engines, lesson):
        print(f"This lesson as it ran on one {device}, with outputs: "
              f"gpu_course/reference/{path.relative_to(REFERENCE_ROOT).as_posix()}")


def _flat(runs):
    if isinstance(runs, dict):
        runs = list(runs.values())
    for run in runs if isinstance(runs, (list, tuple)) else [runs]:
        yield from _flat(run) if isinstance(run, (list, tuple, dict)) else [run]


def _display(obj) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # plain Python: text only
        get_ipython = display = None
    (display if get_ipython and get_ipython() is not None else print)(obj)
