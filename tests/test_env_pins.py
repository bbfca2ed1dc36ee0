"""environment.yml (conda, GPU) must state the same pins as the pip path (pyproject)."""
import re
import tomllib

from support import REPO


def pip_pins_from_environment_yml():
    text = (REPO / "environment.yml").read_text()
    return {m.group(1).lower(): m.group(2) for m in re.finditer(
        r"^\s+-\s+([A-Za-z0-9_.\-]+(?:\[[a-z0-9,]+\])?)==([^\s#]+)", text, re.M)}


def pins(requirements):
    """{name, with its extras as written: version}"""
    out = {}
    for req in requirements:
        name, _, version = req.partition("==")
        out[name.strip().lower()] = version.strip()
    return out


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    expected = {**pins(project["dependencies"]), **pins(extras["gluon-gpu"]), **pins(extras["lab"]),
                **pins(extras["trace"])}
    assert pip_pins_from_environment_yml() == expected


def test_gluon_tracks_pin_numpy_below_1_24_and_same_versions():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    cpu, gpu = pins(extras["gluon"]), pins(extras["gluon-gpu"])
    assert tuple(int(x) for x in cpu["numpy"].split(".")[:2]) < (1, 24)
    assert cpu.pop("mxnet") == gpu.pop("mxnet-cu112") == "1.9.1"
    assert cpu == gpu
    assert "torch" not in cpu and "pynvml" not in {**cpu, **pins(extras["torch"])}


def test_every_requirement_is_pinned_exactly():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = project["dependencies"] + sum(project["optional-dependencies"].values(), [])
    loose = [r for r in reqs if "==" not in r]
    assert not loose, f"unpinned: {loose}"


def test_the_pytorch_constraints_hold_every_pin_of_its_extras():
    """make setup-pytorch installs with constraints/pytorch.txt: a pin changed in pyproject
    without `make lock-pytorch` would make pip refuse the pair (or, loosened, drift)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = {**pins(project["dependencies"]), **pins(extras["torch"]), **pins(extras["lab"]),
              **pins(extras["trace"])}
    wanted = {re.sub(r"\[.*\]", "", k).replace("_", "-"): v for k, v in wanted.items()}
    locked = {name.lower().replace("_", "-"): version for name, version in re.findall(
        r"^([A-Za-z0-9_.\-]+)==(\S+)$", (REPO / "constraints" / "pytorch.txt").read_text(), re.M)}
    differ = {k: (v, locked.get(k)) for k, v in wanted.items() if locked.get(k) != v}
    assert not differ, f"pyproject pin, constraints/pytorch.txt: {differ}; run make lock-pytorch"
    assert not any("+" in v for v in locked.values()), "a local label (+cpu) would refuse a CUDA build"
