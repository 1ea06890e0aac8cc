"""HubLab's thesis metrics inside MLflow's own evaluation: scorers for ``mlflow.genai.evaluate``
and KGQA rows as MLflow evaluation data, so any retrieval function is scored exactly as ``hublab run`` scores."""

import os

from hublab.mlflow_eval.scorers import (
    GOLDEN_KEY,
    GRAPH_KEY,
    HEADLINE,
    ThesisGenerationScorer,
    ThesisRetrievalScorer,
    generation_scorers,
    retrieval_scorers,
)

# mlflow.genai.evaluate runs 10 questions at once by default, each writing a trace and its assessments. A local
# sqlite store takes one writer at a time: on a busy 2-core machine 17 of 44 reduced-GV1 traces were lost
# ("QueuePool limit ... reached") and 3 kept no assessments; with 2 workers all 44 kept all of theirs, in
# 33 s instead of 86 s. A user's own setting wins.
os.environ.setdefault("MLFLOW_GENAI_EVAL_MAX_WORKERS", "2")

__all__ = ["GOLDEN_KEY", "GRAPH_KEY", "HEADLINE", "ThesisGenerationScorer", "ThesisRetrievalScorer",
           "generation_scorers", "retrieval_scorers"]
