"""A run's budgets (per-question time, run time, allowed failure share: ``evaluation.*`` keys, overridable per
request) and the verdict they give on a finished or interrupted run."""

from __future__ import annotations

import math

from hublab.errors import InputError
from hublab.pipeline.config import PipelineConfig

DEFAULT_MAX_FAILURE_SHARE = 0.25


def budgets(cfg: PipelineConfig, question_timeout_s: float | None, run_timeout_s: float | None,
             max_failure_share: float | None) -> dict[str, float | None]:
    ev = cfg.evaluation

    def pick(arg: float | None, key: str, default: float | None) -> float | None:
        v = arg if arg is not None else ev.get(key, default)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0 \
                or (key == "max_failure_share" and v > 1):
            raise InputError(f"expected a finite non-negative number{' <= 1' if key == 'max_failure_share' else ''}"
                             f", got {v!r}", field=f"evaluation.{key}")
        return float(v)

    return {"question_timeout_s": pick(question_timeout_s, "question_timeout_s", None),
            "run_timeout_s": pick(run_timeout_s, "run_timeout_s", None),
            "max_failure_share": pick(max_failure_share, "max_failure_share", DEFAULT_MAX_FAILURE_SHARE)}



def failure(metrics: dict[str, float], budgets: dict[str, float | None], budget_hit: bool, n_done: int,
             n_wanted: int) -> tuple[bool, str]:
    """(failed, why): the run budget ran out, or errors + degraded questions exceed the allowed share."""
    if budget_hit:
        return True, (f"run time budget of {budgets['run_timeout_s']:g} s exhausted after {n_done} of {n_wanted} "
                      "questions (checkpoint kept: rerun the same command to resume)")
    share, limit = metrics.get("failure_share", 0.0), budgets["max_failure_share"]
    if limit is not None and share > limit:
        return True, (f"failure share {share:.0%} > {limit:.0%}: {int(metrics['n_errors'])} errors, "
                      f"{int(metrics['n_degraded'])} degraded of {n_done} questions (LLM errors "
                      f"{int(metrics['n_llm_errors'])}, retries {int(metrics['n_llm_retries'])}, fall-backs "
                      f"{int(metrics['n_llm_fallbacks'])}, over time budget {int(metrics['n_timeouts'])})")
    return False, ""
