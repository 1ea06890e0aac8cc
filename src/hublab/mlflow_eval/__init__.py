"""HubLab's thesis metrics inside MLflow's own evaluation (issue #21): scorers for ``mlflow.genai.evaluate``
and KGQA rows as MLflow evaluation data, so any retrieval function is scored exactly as ``hublab run`` scores."""

from hublab.mlflow_eval.scorers import GOLDEN_KEY, HEADLINE, ThesisRetrievalScorer, retrieval_scorers

__all__ = ["GOLDEN_KEY", "HEADLINE", "ThesisRetrievalScorer", "retrieval_scorers"]
