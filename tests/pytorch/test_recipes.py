"""tools.recipes: the large-batch recipes as real runs, and their table computed from the
records (the committed CPU measurements in gpu_course/reference/recipes-cpu among them)."""
import subprocess
import sys
from pathlib import Path

from tools import recipes

REPO = Path(recipes.__file__).resolve().parents[1]


def test_each_recipe_is_a_valid_change_of_the_large_batch_rung():
    base = recipes.base_config(quick=False)
    assert (base.batch_size, base.optimizer, base.lr_scheduler) == (1024, "lars", "none")
    for name in recipes.RECIPES:
        cfg = recipes.recipe_config(base, name, seed=1)
        assert cfg.name == name and cfg.seed == 1 and cfg.epochs == 3 and cfg.data_on_gpu
    assert recipes.recipe_config(base, "lars512_cos", 0).scaled_lr == 0.4
    assert recipes.recipe_config(base, "naive64", 0).scaled_lr == 0.1


def test_two_recipes_run_and_their_table_comes_from_the_records(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tools.recipes", "--quick", "--recipes",
                           "lars512_cos,naive64", "--out", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    text = (tmp_path / "recipes.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| naive64") or
            line.startswith("| lars512_cos")]
    assert [r.split(" | ")[0] for r in rows] == ["| naive64", "| lars512_cos"]   # recipe order
    assert all(r.rstrip(" |").split(" | ")[-1].endswith("%") for r in rows)


def test_an_unknown_recipe_is_refused_naming_those_allowed(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tools.recipes", "--recipes", "lamb4096",
                           "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "--recipes=lamb4096: allowed:" in done.stderr


def test_the_committed_measurements_back_the_ladder_recipe():
    """The ladder's large batch (ladder.py's comment) is what these records measured: with
    a decay, batch 512 ends at least at the naive rung's accuracy; without one it does not
    learn; batch 1024 falls short in the same epochs."""
    from gpu_course.analyse import metrics
    from gpu_course.measure.records import load_runs
    runs = load_runs(REPO / "gpu_course" / "reference" / "recipes-cpu" / "runs")
    best = {}
    for run in runs:
        if run.status == "finished":
            best.setdefault(run.name, []).append(metrics.val_acc(run))
    naive = sum(best["naive64"]) / len(best["naive64"])   # its seeds' mean
    assert min(best["lars512_cos"]) >= naive - 0.02 and min(best["lars512_onecycle"]) >= naive - 0.02
    assert max(best["lars512_const"]) < naive - 0.3
    assert max(best["nag1024_cos_lr08"]) < naive - 0.05
    assert len(best["naive64"]) >= 2 and len(best["lars512_cos"]) >= 2   # seeds: the spread
    assert recipes.table(REPO / "gpu_course" / "reference" / "recipes-cpu" / "runs") == \
        (REPO / "gpu_course" / "reference" / "recipes-cpu" / "recipes.md").read_text()
