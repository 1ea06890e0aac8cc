"""Pruning by question (issue #46) on real runs: BM25 tuned with TPE on 30 GV3 questions over a 30-paper slice of
the GV3 export, once with the Wilcoxon pruner (each question's AP@10 reported as it ends, the questions in one
seeded order, paired across trials by their dataset position) and once unpruned, same seed: some trials stop
early, and both studies choose the same configuration with the same score."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import small_gv3_project

BM25 = """
name: bm25_prune
retriever:
  type: bm25
  params: {units: auto, n_results: 30}
llm: {backend: none}
evaluation: {k: 10}
search_space:
  retriever.params.k1: {low: 0.2, high: 3.0}
  retriever.params.b: {low: 0.0, high: 1.0}
  retriever.params.n_results: {low: 1, high: 30}
"""


@pytest.fixture()
def project(tmp_path: Path, shared: Path, gv3_orkg_graph, monkeypatch) -> Path:
    root = small_gv3_project(tmp_path / "proj", shared, gv3_orkg_graph, monkeypatch, min_papers=30,
                             n_questions=30)
    (root / "bm25.yaml").write_text(BM25)
    monkeypatch.chdir(root)
    return root


def _study(root: Path, name: str, pruner: str):
    from hublab.config import settings
    from hublab.tuning.orchestrate import TuneRequest, run_tune

    out = run_tune(TuneRequest(pipeline=root / "bm25.yaml", study=name, mode="tpe", dataset="gv3_orkg",
                               n_trials=12, objectives=["map_at_10_triples"], seed=0, carbon=False, progress=False,
                               enqueue_base=True, prune=pruner != "none", pruner="wilcoxon", trial_artifacts=False),
                   settings=settings())
    return out.result


@pytest.mark.slow  # 24 BM25 trials over 30 questions, each a logged MLflow run (~40 s): full tier
def test_a_pruned_and_an_unpruned_study_choose_the_same(project: Path):
    pruned = _study(project, "pruned", "wilcoxon")
    full = _study(project, "full", "none")
    states = [t["state"] for t in pruned.trials]
    assert "PRUNED" in states, states  # worse trials stopped before their last question
    assert all(t["state"] == "COMPLETE" for t in full.trials)
    assert pruned.best["params"] == full.best["params"]
    assert pruned.best["values"] == pytest.approx(full.best["values"])
