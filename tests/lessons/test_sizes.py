"""Every lesson's three sizes: full, smoke (CI) and check (`make gpu-check` on a GPU)."""
import pkgutil
import re

import pytest

from gpu_course import lessons
from gpu_course.config import Experiment
from gpu_course.lessons import SizeMode, size_mode, sizes

NUMBERS = sorted(m.name[1:3] for m in pkgutil.iter_modules(lessons.__path__)
                 if m.name[:1] == "l" and m.name[1:3].isdigit())


@pytest.mark.parametrize("number", NUMBERS)
def test_the_check_changes_only_full_sizes_and_makes_a_valid_experiment(number):
    table = lessons.module_of(number).SIZES
    assert set(table["check"]) <= set(table["full"]), "check changes a size full lacks"
    check, full = sizes(number, mode=SizeMode.CHECK), sizes(number, mode="full")
    Experiment(**check)   # raises on a field the check sets wrongly
    for name, value in full._all.items():   # the networks, workers and compilers stay full
        if name not in table["check"]:
            assert getattr(check, name) == value, name
    smaller = [k for k in ("train_size", "images", "ladder_train_size") if k in table["check"]]
    assert smaller and all(getattr(check, k) < (getattr(full, k) or 50_000) for k in smaller)


def test_the_environment_chooses_the_size(monkeypatch):
    monkeypatch.delenv("GPU_COURSE_SMOKE", raising=False)
    monkeypatch.delenv("GPU_COURSE_SIZE", raising=False)
    assert size_mode() is SizeMode.FULL
    monkeypatch.setenv("GPU_COURSE_SMOKE", "1")
    assert size_mode() is SizeMode.SMOKE and sizes("03").compile_backend == "aot_eager"
    monkeypatch.setenv("GPU_COURSE_SIZE", "check")
    with pytest.raises(ValueError, match="contradicts GPU_COURSE_SMOKE"):
        size_mode()
    monkeypatch.delenv("GPU_COURSE_SMOKE")
    assert size_mode() is SizeMode.CHECK and sizes("03").compile_backend == "inductor"
    assert sizes("03", smoke=True).compile_backend == "aot_eager"   # an argument wins
    monkeypatch.setenv("GPU_COURSE_SIZE", "medium")
    with pytest.raises(ValueError, match=r"GPU_COURSE_SIZE='medium' is not a size; allowed: "
                                         r"full, check, smoke"):
        size_mode()


@pytest.mark.parametrize("number", NUMBERS)
def test_each_lesson_declares_the_sizes_of_its_own_and_no_others(number):
    """OWN_SIZES names exactly the lesson's sizes that are no Experiment field: one it
    forgot would be refused below, one it no longer has is a stale declaration."""
    module = lessons.module_of(number)
    used = set().union(*(module.SIZES[mode] for mode in module.SIZES))
    assert set(module.OWN_SIZES) == used - set(Experiment.__dataclass_fields__)


def test_a_size_that_is_neither_a_field_nor_the_lesson_s_own_is_refused_by_name(monkeypatch):
    """A typo (`epoch`) or a retired field in SIZES would otherwise be kept out of
    `**SIZES` without a word, and the run would train with the default."""
    module = lessons.module_of("03")
    table = {**module.SIZES, "smoke": {**module.SIZES["smoke"], "epoch": 2, "momentum": 0.5}}
    monkeypatch.setattr(module, "SIZES", table)
    with pytest.raises(ValueError, match=r"size\(s\) epoch \(did you mean epochs\?\), momentum: "
                                         r"neither an Experiment field nor one of the lesson's "
                                         r"own sizes \(OWN_SIZES: compile_backend, "):
        sizes("03", smoke=True)
    monkeypatch.setattr(module, "SIZES", {**module.SIZES, "smoke": {"epochs": 2, "batches": 3}})
    monkeypatch.setattr(module, "OWN_SIZES", ("batches",))
    assert sizes("03", smoke=True) == {"dataset": "synthetic", "monitor_interval": 0.2,
                                       "epochs": 2}
    assert sizes("03", smoke=True).batches == 3


@pytest.mark.parametrize("change, says", [
    (dict(exercise_size=-1), "exercise_size=-1: allowed: a whole number >= 0"),
    (dict(exercise_size="big"), "exercise_size='big': allowed: a whole number >= 0"),
    (dict(exercise_size=1.5), "exercise_size=1.5: allowed: a whole number >= 0"),
    (dict(epochs=True), "epochs=True: allowed: a whole number >= 0"),
    (dict(monitor_interval=float("nan")), "monitor_interval=nan: allowed: a finite number >= 0"),
    (dict(worker_counts=4), "worker_counts=4: allowed: a tuple"),
])
def test_a_size_changed_to_a_value_not_of_its_kind_is_refused_by_name(change, says):
    """gc.sizes("02", exercise_size=-1) was taken as it was, and failed later naming
    train_size, or not at all."""
    with pytest.raises(ValueError, match=re.escape(says)):
        sizes("02", smoke=True, **change)
    assert sizes("02", smoke=True, exercise_size=4096, worker_counts=[0, 2]).exercise_size == 4096
