"""A study's charts are committed reports (``reports/tune/…``): the same trials must give the same bytes in every
process, or a rerun of ``tune_all`` dirties the tree (#42). Parameters whose importances tie were drawn in the
order of Python's per-process string hashing until the chart was given them sorted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DRAW = """
import sys
from pathlib import Path
from types import SimpleNamespace

import optuna
from optuna.distributions import CategoricalDistribution as C, FloatDistribution as F, IntDistribution as I

from hublab.tuning.report import _plots
from hublab.tuning.study_spec import StudySpec

# HubLink's OFAT study on reduced GV1 as tune runs it: one factor changed per trial from the base (row 0); three
# factors tie in importance, two others tie too
SPACE = {"use_topic": C([True, False]), "components": C([True, False]), "top_paths": I(10, 30, step=10),
         "hubs": I(10, 30, step=10), "filter": C([True, False]), "penalty": F(0.0, 0.1), "alpha": F(0.0, 9.0)}
BASE = {"use_topic": True, "components": True, "top_paths": 10, "hubs": 10, "filter": True, "penalty": 0.1,
        "alpha": 5.0}
ROWS = [({}, 0.8605), ({"use_topic": False}, 0.8205), ({"components": False}, 0.6030), ({"top_paths": 20}, 0.8632),
        ({"top_paths": 30}, 0.8370), ({"hubs": 20}, 0.8543), ({"hubs": 30}, 0.8461), ({"filter": False}, 0.3859),
        ({"penalty": 0.0}, 0.8645), ({"penalty": 0.01}, 0.8739), ({"penalty": 0.05}, 0.8693), ({"alpha": 0.0}, 0.7048),
        ({"alpha": 3.0}, 0.8523), ({"alpha": 9.0}, 0.8270)]
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study(direction="maximize")
for changed, value in ROWS:
    study.add_trial(optuna.trial.create_trial(params={**BASE, **changed}, distributions=SPACE, value=value))
res = SimpleNamespace(study=study, spec=StudySpec("s", mode="ofat", objectives=["recall_triples"]))
for out in sys.argv[1:]:  # several folders: the same charts drawn again in this process
    print(sorted(p.name for p in _plots(res, Path(out))))
"""


def _draw(out: Path, hash_seed: str, *again: Path) -> tuple[bytes, ...]:
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-c", DRAW, str(out), *map(str, again)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return tuple((out / name).read_bytes() for name in ("param_importances.png", "parallel_coordinate.png"))


def test_the_study_charts_are_the_same_in_every_process(tmp_path: Path):
    charts = {_draw(tmp_path / seed, seed) for seed in ("1", "2", "3", "4")}
    assert len(charts) == 1


def test_charts_drawn_after_another_studys_in_one_process_are_the_same(tmp_path: Path):
    """A comparison's job process draws every fold's charts of its method: Optuna's importance chart set its style
    (ggplot) for the whole process, and every later chart came out in it."""
    first = _draw(tmp_path / "a", "0", tmp_path / "b", tmp_path / "c")
    for later in ("b", "c"):
        assert tuple((tmp_path / later / name).read_bytes()
                     for name in ("param_importances.png", "parallel_coordinate.png")) == first, later
