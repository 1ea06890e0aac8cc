"""The default study evaluator: one trial = one experiment-runner run, logged as a nested MLflow run
under the study's parent run. Models and graphs are shared across trials (resource cache), and runs
are checkpointed per question, so an interrupted study loses at most the question in flight.

The runner's checkpoint is keyed by what determines the answers (the config, graph, questions); it keeps one
MLflow run per owner (experiment, run name, parent run), so the same config in a second study reuses the answers
under a run of its own study's parent, never the first study's run."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from hublab.config import Settings
from hublab.evaluation import names
from hublab.experiment.checkpoint import RunLocked
from hublab.experiment.question import record_position
from hublab.experiment.request import RunRequest
from hublab.experiment.runner import run_experiment
from hublab.pipeline.config import PipelineConfig
from hublab.tuning.study import RECALL, TrialRequest

#: Objectives a trial's retrieval records give without any generation metric (a study over only these skips them).
_NON_GENERATION = frozenset({names.RUNTIME, names.LLM_TOKENS, names.TRIPLES_PER_QUESTION, names.N_QUESTIONS,
                             names.N_ERRORS})


def needs_generation_metrics(objectives: Sequence[str], k: int) -> bool:
    """Whether any objective may come from the generation metrics (BLEU, ROUGE, BERTScore, RAGAS): anything but
    the thesis retrieval metrics at the pipeline's k and the run's own counts."""
    return any(o not in _NON_GENERATION and o not in names.retrieval_names(k) for o in objectives)


def trial_config(config: dict[str, Any], objectives: Sequence[str]) -> dict[str, Any]:
    """The configuration a trial runs: the study's, without generation metrics when no objective needs them.
    They were a third of a HubLink trial on reduced GV1 (ROUGE with stemming over 20-triple answers, ~0.1 s a
    question) and selected nothing; the chosen configuration keeps them (the tuned file is written from the
    pipeline, not from this), and its evaluation runs compute them."""
    evaluation = dict(config.get("evaluation") or {})
    if not evaluation.get("generation_metrics") or needs_generation_metrics(objectives,
                                                                             int(evaluation.get("k", names.K))):
        return config
    evaluation["generation_metrics"] = []
    return {**config, "evaluation": evaluation}


def runner_evaluator(graph: str, dataset: str, *, limit: int | None, experiment: str, settings: Settings,
                     prune_every: int = 10, objective: str = RECALL, track_carbon: bool = True,
                     log_artifacts: bool = True, objectives: Sequence[str] | None = None,
                     per_question: bool = False, order_seed: int | None = None, hub_types: Sequence[str] = ()):
    """``objectives``: every objective of the study (default: ``objective`` alone), so that a trial computes the
    generation metrics only where one of them may need them.

    ``per_question`` (the Wilcoxon pruner): each question's own objective value is reported as it ends, its step the
    question's position in the dataset (the pairing across trials), the questions answered in the order
    ``order_seed`` fixes (the same for every trial of the study); else (the median pruner) the partial mean every
    ``prune_every`` questions. ``hub_types``: ``--hub-type``, over the graph's declared hub types."""
    # what every trial's run shares, decided once for the study; a trial adds its config, name and parent run
    study_run = partial(RunRequest, graph=graph, dataset=dataset, settings=settings, limit=limit,
                        experiment=experiment, progress=False, track_carbon=track_carbon, trace=False,
                        log_artifacts=log_artifacts, log_dataset_input=log_artifacts, share_answers=True,
                        order_seed=order_seed if per_question else None,
                        hub_types=tuple(hub_types))

    wanted = list(objectives or [objective])

    def evaluate(req: TrialRequest) -> dict[str, float]:
        cfg = PipelineConfig.from_dict(trial_config(req.config, wanted), source=f"trial {req.name}")
        run = study_run(cfg=cfg, run_name=req.name, parent_run_id=req.parent_run_id,
                        nested=req.parent_run_id is not None)
        on_question = None
        if req.report is not None and per_question:
            def on_question(done: int, total: int, partial: Callable[[], dict[str, float]],
                            answer: dict[str, Any]) -> bool:
                value = question_value(answer, objective)
                if done == total or value is None:
                    return False
                return req.report(record_position(answer["key"]), value)
        elif req.report is not None:
            def on_question(done: int, total: int, partial: Callable[[], dict[str, float]],
                            answer: dict[str, Any]) -> bool:
                if done % prune_every or done == total:
                    return False
                metrics = partial()
                return objective in metrics and req.report(done, float(metrics[objective]))

        summary = _run_when_free(run, on_question)
        if summary.stopped:
            return {"_pruned": 1.0}
        return dict(summary.metrics)

    return evaluate


#: how long a trial waits for another worker that runs the very same configuration (then it reuses its answers)
LOCK_WAIT_S = 3600.0


def _run_when_free(run: RunRequest, on_question: Any):
    """Run the trial; when another worker of the study runs the very same configuration (two workers can draw the
    same point of a categorical space), wait for it, then resume its checkpoint (every answer reused), instead of
    failing the trial on the run's lock. The wait is bounded and said once."""
    import logging
    import time

    deadline, said = time.monotonic() + LOCK_WAIT_S, False
    while True:
        try:
            return run_experiment(run, on_question=on_question)
        except RunLocked:
            if time.monotonic() > deadline:
                raise
            if not said:
                logging.getLogger(__name__).warning("trial %s: another worker runs the same configuration; waiting "
                                                    "for it (at most %.0f s), then reusing its answers",
                                                    run.run_name, LOCK_WAIT_S)
                said = True
            time.sleep(1.0)


def question_value(answer: dict[str, Any], objective: str) -> float | None:
    """One question's value of the study's objective: its retrieval metric (AP@10 for MAP@10, …) or its runtime;
    None for an objective a single question does not have (then nothing is reported and nothing pruned)."""
    if answer.get("error"):
        return None
    value = (answer.get("metrics") or {}).get(objective)
    if value is None and objective == names.RUNTIME:
        value = answer.get("runtime")
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None
