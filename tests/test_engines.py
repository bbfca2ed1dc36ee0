import subprocess
import sys

import pytest

from gpu_course import engines
from gpu_course.engines import pick_engine
from support import REPO


@pytest.mark.parametrize("caps, engine", [([], "gluon"), ([(7, 0)], "gluon"), ([(8, 6)], "gluon"),
                                          ([(8, 0), (9, 0)], "pytorch"), ([(10, 0)], "pytorch")])
def test_engine_follows_the_gpu(caps, engine):
    chosen, reason = pick_engine(env={}, capabilities=caps, installed=())
    assert chosen == engine and reason
    # both frameworks in one environment: the GPU decides too
    assert pick_engine(env={}, capabilities=caps, installed=("gluon", "pytorch"))[0] == engine


@pytest.mark.parametrize("only", ["gluon", "pytorch"])
def test_a_tracks_own_environment_picks_its_framework_whatever_the_gpu(only):
    for caps in ([], [(9, 0)]):
        chosen, reason = pick_engine(env={}, capabilities=caps, installed=(only,))
        assert chosen == only and "the framework this environment has" in reason


def test_engine_override_and_bad_value():
    assert pick_engine(env={"ENGINE": "pytorch"}, capabilities=[])[0] == "pytorch"
    with pytest.raises(ValueError, match="ENGINE='tf'.*gluon, pytorch"):
        pick_engine(env={"ENGINE": "tf"}, capabilities=[])


def test_module_prints_engine_for_the_makefile():
    out = subprocess.run([sys.executable, "-m", "gpu_course.engines"], cwd=REPO,
                         capture_output=True, text=True, env={"ENGINE": "pytorch", "PATH": ""})
    assert out.returncode == 0 and out.stdout.strip() == "pytorch"
    out = subprocess.run([sys.executable, "-m", "gpu_course.engines"], cwd=REPO,
                         capture_output=True, text=True, env={"ENGINE": "cuda", "PATH": ""})
    assert out.returncode == 2 and "ENGINE='cuda'" in out.stderr


@pytest.mark.parametrize("cap, extra", [((8, 6), "gluon-gpu"), ((8, 7), "gluon-gpu"),
                                        ((8, 9), "gluon-gpu"), ((9, 0), "gluon"),
                                        ((10, 0), "gluon")])
def test_ada_gets_the_gluon_gpu_build_and_says_it_is_untested(cap, extra):
    assert engines.gluon_extra([cap]) == extra
    engine, reason = pick_engine(env={}, capabilities=[cap], installed=())
    assert engine == ("gluon" if extra == "gluon-gpu" else "pytorch")
    assert ("not yet run on such a card" in reason) == (cap in ((8, 7), (8, 9)))
    assert engines.gluon_extra([(8, 6), (9, 0)]) == "gluon"   # every GPU must run it


def track_table() -> str:
    """README's table of GPUs and tracks, from engines.GPUS and engines.gluon_gpu."""
    rows = ["| your GPU | track | environment |", "| --- | --- | --- |",
            "| none (CPU) | Gluon (MXNet 1.9.1 CPU build) | `.venv/gluon`, "
            "`pip install -e .[gluon,lab,trace]` |"]
    groups = {}
    for name, cap in engines.GPUS.items():
        groups.setdefault(engines.gluon_gpu(cap)[0], []).append((name, cap))
    gpu_env = ("`environment.yml` (conda: CUDA 11.2 + cuDNN 8), or `.[gluon-gpu,lab,trace]` "
               "with CUDA 11.2/cuDNN 8 libraries on the machine")
    track = {engines.Gluon.RUNS: ("Gluon (`mxnet-cu112`)", gpu_env),
             engines.Gluon.UNTESTED: ("Gluon (`mxnet-cu112`): runs by binary compatibility, not yet "
                              "run on such a card", gpu_env),
             engines.Gluon.NO: ("PyTorch", "`.venv/pytorch`, `pip install -e .[torch,lab,trace]`")}
    for kind, gpus in groups.items():
        caps = sorted({c for _, c in gpus})
        span = "–".join(dict.fromkeys(f"sm_{c[0]}{c[1]}" for c in (caps[0], caps[-1])))
        rows.append(f"| {', '.join(n for n, _ in gpus)} ({span}) | {track[kind][0]} | "
                    f"{track[kind][1]} |")
    return "\n".join(rows)


def test_the_readme_table_of_tracks_is_the_engines_table():
    for doc in ("README.md", "docs/tracks.md"):
        assert track_table() in (REPO / doc).read_text(), f"{doc} should hold:\n{track_table()}"
    assert "| L4, L40S (sm_89) | Gluon" in track_table()
