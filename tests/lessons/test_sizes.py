"""Every lesson's three sizes: full, smoke (CI) and check (`make gpu-check` on a GPU)."""
import pkgutil

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
    with pytest.raises(ValueError, match="ask for different sizes"):
        size_mode()
    monkeypatch.delenv("GPU_COURSE_SMOKE")
    assert size_mode() is SizeMode.CHECK and sizes("03").compile_backend == "inductor"
    assert sizes("03", smoke=True).compile_backend == "aot_eager"   # an argument wins
    monkeypatch.setenv("GPU_COURSE_SIZE", "medium")
    with pytest.raises(ValueError, match=r"GPU_COURSE_SIZE='medium' is not a size; allowed: "
                                         r"full, check, smoke"):
        size_mode()
