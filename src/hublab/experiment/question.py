"""One question of a run: answered by the pipeline, traced as the root span of its own trace, scored, and turned
into the checkpointed record (secrets masked, LLM usage and carbon per question, degradation flags)."""

from __future__ import annotations

import time
from typing import Any

from hublab import observability
from hublab.datasets.model import QAPair
from hublab.errors import ServiceUnavailable
from hublab.experiment.aggregate import SLICE_FIELDS, _retrieval_metrics, is_degraded


def record_key(i: int, p: QAPair) -> str:
    """A question's checkpoint key: its position and uid (a dataset may repeat a uid)."""
    return f"{i}:{p.uid}"


def record_position(key: str) -> int:
    """The dataset position a :func:`record_key` holds (a question's stable id across the trials of a study)."""
    return int(key.split(":", 1)[0])


def run_question(pipeline, carbon, i: int, p: QAPair, k: int, *, question_timeout_s: float | None = None,
                  secrets: list[str] | None = None) -> dict[str, Any]:
    """One question, traced as the root span of its trace (``hublab.observability``; a no-op untracked): inputs
    the question, outputs the answer and retrieved triples, attributes its metrics, runtime and LLM usage."""
    with observability.span(f"question {record_key(i, p)}", observability.CHAIN,
                            inputs={"question": p.question, "topic_entity_id": p.topic_entity_id,
                                    "topic_entity_value": p.topic_entity_value},
                            attributes={"uid": p.uid, "index": i}) as sp:
        rec = _answer_question(pipeline, carbon, i, p, k, question_timeout_s=question_timeout_s, secrets=secrets)
        if sp.recording:
            sp.set_outputs({"answer": rec["generated_answer"], "retrieved_context": rec["retrieved_context"],
                            "error": rec["error"], "reason": rec["reason"]})
            sp.set_attributes({**{f"metric.{m}": v for m, v in rec["metrics"].items()},
                               "golden_answer": p.golden_answer, "golden_triples": list(p.golden_triples),
                               "runtime_s": rec["runtime"] or 0.0, "llm_tokens": rec["llm_tokens"],
                               "n_llm_fallbacks": rec["n_llm_fallbacks"], "degraded": rec["degraded"],
                               "error": rec["error"] or ""})
        return rec


def _answer_question(pipeline, carbon, i: int, p: QAPair, k: int, *, question_timeout_s: float | None = None,
                     secrets: list[str] | None = None) -> dict[str, Any]:
    from hublab.tracking.mlflow_log import scrub

    name = record_key(i, p)
    # the budget bounds the question's LLM calls together: once it is spent, the calls left fail at once
    deadline = time.monotonic() + question_timeout_s if question_timeout_s else None
    for llm in pipeline.all_llms():
        llm.reset_usage()
        llm.set_deadline(deadline)
    if carbon is not None:
        carbon.start(name)
    error = None
    t0 = time.perf_counter()
    try:
        out = pipeline.run(p.question, p.topic_entity_id, p.topic_entity_value)
    except ServiceUnavailable:
        raise  # not this question's error: the run stops (FAILED, checkpoint kept) and a rerun resumes
    except Exception as exc:  # recorded per question; the run goes on
        out = None
        error = f"{type(exc).__name__}: {exc}"
    finally:
        for llm in pipeline.all_llms():
            llm.set_deadline(None)
    elapsed = time.perf_counter() - t0
    if out is not None and getattr(out, "error", None):
        error = out.error  # the pipeline caught a retriever exception: still an error, not an empty answer
    em = carbon.stop(name) if carbon is not None else None
    usage_p = usage_c = cached = errors = retries = 0
    cost = 0.0
    for llm in pipeline.all_llms():
        u = llm.reset_usage()
        usage_p += u.prompt_tokens
        usage_c += u.completion_tokens
        cached += u.cached_calls
        errors += getattr(u, "errors", 0)
        retries += getattr(u, "retries", 0)
        cost += getattr(u, "cost", 0.0)
    fallbacks = list(getattr(out, "fallbacks", None) or []) if out else []
    # not preemptive (a Python call cannot be interrupted safely): the question is finished, then counted as
    # over budget; its LLM calls stop at the budget (set_deadline), each also within its own timeout
    timed_out = question_timeout_s is not None and elapsed > question_timeout_s
    retrieved = out.context_strings if out else []
    metrics = _retrieval_metrics(retrieved, list(p.golden_triples), k)
    sec = secrets or []
    rec: dict[str, Any] = {
        "key": name, "uid": p.uid, "question": scrub(p.question, sec),  # a key pasted into a question, too
        "golden_answer": scrub(p.golden_answer, sec) if isinstance(p.golden_answer, str) else p.golden_answer,
        "golden_triples": list(p.golden_triples), "topic_entity_id": p.topic_entity_id,
        "generated_answer": scrub(out.answer, sec) if out else "", "retrieved_context": retrieved,
        "reason": scrub(out.reason, sec) if out and out.reason else None,
        "error": scrub(error, sec) if error else None, "notes": [scrub(n, sec) for n in out.notes] if out else [],
        "sources": out.sources if out else [],
        "runtime": out.runtime_s if out else None, "llm_prompt_tokens": usage_p, "llm_completion_tokens": usage_c,
        "llm_tokens": usage_p + usage_c, "llm_cached_calls": cached, "n_llm_errors": errors,
        "n_llm_retries": retries, "n_llm_fallbacks": len(fallbacks), "fallbacks": [scrub(f, sec) for f in fallbacks],
        "llm_cost": cost, "timed_out": timed_out, "metrics": metrics,
        "qa": {f: getattr(p, f) for f in SLICE_FIELDS},
    }
    rec["degraded"] = is_degraded(rec)
    if em is not None:
        rec.update({k_: v for k_, v in em.__dict__.items()})
    return rec
