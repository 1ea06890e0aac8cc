"""scripts/check_dvc_lock.py (run by .ci/run): stale code, pipeline and params dependencies fail CI; data that a
fresh clone has not built yet does not."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("check_dvc_lock", ROOT / "scripts" / "check_dvc_lock.py")
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)


def test_code_and_params_changes_are_stale_data_is_not():
    # the shape of `dvc status --json` on a fresh clone after a code change (dvc 3.67)
    status = {
        "index@0": [{"changed deps": {"src/hublab/retrievers": "modified", "data/snapshots": "deleted"}},
                    {"changed outs": {"models/gv3_orkg__hublink": "not in cache"}}],
        "evaluate@6": [{"changed deps": {"pipelines/bm25.yaml": "modified"}}],
        "tune": [{"changed params": {"params.yaml": {"tune.n_trials": {"old": 15, "new": 40}}}}],
        "evaluate@1": [{"changed deps": {"models/gv1__hublink": "deleted", "../shared/data/kgqa": "modified"}}],
        "train": [{"changed outs": {"models/embedders/hublab-minilm-orkg": "not in cache"}}],
    }
    stale = check.stale_stages(status)
    assert stale == {"index@0": ["src/hublab/retrievers (modified)"], "evaluate@6": ["pipelines/bm25.yaml (modified)"],
                     "tune": ["params.yaml: tune.n_trials"]}


def test_an_up_to_date_status_has_nothing_stale():
    assert check.stale_stages({}) == {}
    assert check.stale_stages({"snapshot": [{"changed outs": {"data/snapshots": "not in cache"}}]}) == {}


def test_a_stage_never_run_is_noted_not_failed():
    status = {"compare_fair": [{"changed deps": {"src/hublab/evaluation": "modified"}}],
              "index@0": [{"changed deps": {"src/hublab/retrievers": "modified"}}]}
    locked = {"index@0", "snapshot"}
    assert check.stale_stages(status, locked) == {"index@0": ["src/hublab/retrievers (modified)"]}
    assert check.never_run(status, locked) == ["compare_fair"]
    assert check.locked_stages(ROOT / "dvc.lock") >= {"snapshot", "graphs", "datasets", "index@0", "evaluate@0"}
