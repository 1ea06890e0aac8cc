"""run_tune's bookkeeping (parent MLflow run per study, outputs) with a closed-form evaluator, in process."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import yaml

from hublab.config import Settings
from hublab.tuning.orchestrate import PARENT_ATTR, TuneRequest, run_tune
from hublab.tuning.study import TrialRequest

pytestmark = pytest.mark.slow  # whole tuning studies through the runner and MLflow

PIPELINE = {
    "name": "bm25_tiny",
    "retriever": {"type": "bm25", "params": {"n_results": 10, "add_rel": True}},
    "llm": {"backend": "none"},
    "search_space": {"retriever.params.n_results": [5, 10, 20], "retriever.params.add_rel": [True, False]},
}


def score(req: TrialRequest) -> dict[str, float]:
    p = req.config["retriever"]["params"]
    return {"recall_triples": 0.5 + p["n_results"] / 100 - (0.1 if not p["add_rel"] else 0),
            "hit_at_10_triples": 0.3, "runtime": 1.0}


def project(root: Path) -> Settings:
    root.mkdir(parents=True)
    params = yaml.safe_load((Path(__file__).resolve().parents[2] / "params.yaml").read_text())
    (root / "p.yaml").write_text(yaml.safe_dump(PIPELINE))
    return Settings(root, params)


def parents(root: Path, study: str):
    from mlflow.tracking import MlflowClient

    from hublab.tracking.mlflow_log import tracking_uri

    client = MlflowClient(tracking_uri(root))
    exp = client.get_experiment_by_name(f"tune-{study}")
    return [r for r in client.search_runs([exp.experiment_id]) if "mlflow.parentRunId" not in r.data.tags]


def req(st: Settings, study: str, **kw) -> TuneRequest:
    return TuneRequest(st.root / "p.yaml", study, dataset="gv3_orkg", progress=False, **kw)


def test_one_parent_per_study_and_a_recreated_study_gets_its_own(tmp_path):
    st = project(tmp_path / "p")
    first = run_tune(req(st, "s"), settings=st, evaluator=score)
    again = run_tune(req(st, "s"), settings=st, evaluator=score)
    assert again.parent_run_id == first.parent_run_id and len(parents(st.root, "s")) == 1
    assert first.result.chosen == {"retriever.params.n_results": 20, "retriever.params.add_rel": True}
    storage = first.spec.storage
    optuna.delete_study(study_name="s", storage=storage)  # a new study under the old name
    fresh = run_tune(req(st, "s"), settings=st, evaluator=score)
    assert fresh.parent_run_id != first.parent_run_id and len(parents(st.root, "s")) == 2
    assert optuna.load_study(study_name="s", storage=storage).user_attrs[PARENT_ATTR] == fresh.parent_run_id


def test_workers_with_separate_mlflow_stores_keep_one_parent_each(tmp_path):
    """One Optuna storage, two projects (two machines): each MLflow store holds one parent for the study and
    the study's attr keeps naming the first one."""
    a, b = project(tmp_path / "a"), project(tmp_path / "b")
    storage = f"sqlite:///{tmp_path / 'shared.db'}"
    ra = run_tune(req(a, "s", storage=storage, n_trials=2), settings=a, evaluator=score)
    rb = run_tune(req(b, "s", storage=storage, n_trials=1), settings=b, evaluator=score)
    rb2 = run_tune(req(b, "s", storage=storage), settings=b, evaluator=score)
    ra2 = run_tune(req(a, "s", storage=storage), settings=a, evaluator=score)
    assert ra2.parent_run_id == ra.parent_run_id and rb2.parent_run_id == rb.parent_run_id != ra.parent_run_id
    assert len(parents(a.root, "s")) == 1 and len(parents(b.root, "s")) == 1
    assert optuna.load_study(study_name="s", storage=storage).user_attrs[PARENT_ATTR] == ra.parent_run_id
    assert not ra2.result.pending and ra2.result.chosen == rb2.result.chosen


def test_parent_left_running_is_marked_killed_then_resumed(tmp_path):
    from mlflow.tracking import MlflowClient

    from hublab.tracking.mlflow_log import tracking_uri

    st = project(tmp_path / "p")
    first = run_tune(req(st, "s", n_trials=1), settings=st, evaluator=score)
    client = MlflowClient(tracking_uri(st.root))
    client.update_run(first.parent_run_id, status="RUNNING")  # as a kill -9 leaves it (real kill: concurrency tests)
    out = run_tune(req(st, "s"), settings=st, evaluator=score)
    run = client.get_run(out.parent_run_id)
    assert out.recovered and out.parent_run_id == first.parent_run_id
    assert run.info.status == "FINISHED" and "marked KILLED" in run.data.tags["hublab.recovered"]


def test_outputs_and_summary(tmp_path):
    st = project(tmp_path / "p")
    out = run_tune(req(st, "s", n_trials=2), settings=st, evaluator=score)
    text = "\n".join(out.summary())
    assert "2 of 4 OFAT trials not finished yet" in text
    assert (out.out_dir / "pending.json").exists() and (out.out_dir / "base_pipeline.yaml").exists()
    # a factor is decided only when all its values and the base are measured
    done = {t.user_attrs["ofat_key"] for t in out.result.study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))}
    assert len(done) == 2 and "base" in done
    n_keys = {"retriever.params.n_results=5", "retriever.params.n_results=20"}
    for path, keys in (("retriever.params.n_results", n_keys),
                       ("retriever.params.add_rel", {"retriever.params.add_rel=false"})):
        assert (path in out.result.chosen) == keys.issubset(done)
    with pytest.raises(Exception, match="n-trials must be positive"):
        run_tune(req(st, "s", n_trials=0), settings=st, evaluator=score)


def test_experiment_can_be_named(tmp_path):
    """``hublab tune --experiment``: the parent and its trials go to the named experiment, not tune-<study>."""
    from mlflow.tracking import MlflowClient

    from hublab.tracking.mlflow_log import tracking_uri

    st = project(tmp_path / "p")
    out = run_tune(req(st, "named", n_trials=2, experiment="my-tuning"), settings=st, evaluator=score)
    assert out.experiment == "my-tuning" and "MLflow experiment 'my-tuning'" in out.summary()[-1]
    client = MlflowClient(tracking_uri(st.root))
    assert client.get_experiment_by_name("tune-named") is None
    exp = client.get_experiment_by_name("my-tuning")
    assert client.get_run(out.parent_run_id).info.experiment_id == exp.experiment_id
