"""The default study evaluator: one trial = one experiment-runner run, logged as a nested MLflow run
under the study's parent run. Models and graphs are shared across trials (resource cache), and runs
are checkpointed per question, so an interrupted study loses at most the question in flight."""

from __future__ import annotations

from hublab.config import Settings
from hublab.pipeline.config import PipelineConfig
from hublab.tuning.study import RECALL, TrialRequest


def runner_evaluator(graph: str, dataset: str, *, limit: int | None, experiment: str, settings: Settings,
                     prune_every: int = 10, objective: str = RECALL, track_carbon: bool = True):
    from hublab.experiment.runner import run_experiment

    def evaluate(req: TrialRequest) -> dict[str, float]:
        cfg = PipelineConfig.from_dict(req.config, source=f"trial {req.name}")
        on_question = None
        if req.report is not None:
            def on_question(done: int, total: int, partial: dict[str, float]) -> bool:
                if done % prune_every or done == total or objective not in partial:
                    return False
                return req.report(done, float(partial[objective]))

        summary = run_experiment(cfg, graph, dataset, limit=limit, experiment=experiment,
                                 parent_run_id=req.parent_run_id, nested=req.parent_run_id is not None,
                                 run_name=req.name, on_question=on_question, settings=settings,
                                 progress=False, track_carbon=track_carbon)
        if summary.stopped:
            return {"_pruned": 1.0}
        return dict(summary.metrics)

    return evaluate
