"""Generation metrics (judge LLM, RAGAS, BERTScore) over a run's finished records: computed once per record,
after the questions, so a resumed run scores only what it has not scored yet."""

from __future__ import annotations

from typing import Any

from hublab.config import Settings
from hublab.pipeline.config import PipelineConfig


def generation_metrics(cfg: PipelineConfig, records: list[dict[str, Any]], settings: Settings) -> dict[str, str]:
    """Fill generation metrics into records that lack them; returns {metric: why skipped}."""
    wanted = list(cfg.evaluation.get("generation_metrics") or [])
    if not wanted:
        return {}
    todo = [r for r in records if not r.get("generation_done")]
    if not todo:
        return {}
    from hublab.evaluation.generation import GenerationEvaluator

    judge = None
    judge_cfg = cfg.evaluation.get("judge_llm")
    if judge_cfg:
        from hublab.llm.factory import build_llm

        judge = build_llm(judge_cfg, cache_dir=settings.cache_dir())
    ragas_cfg = cfg.evaluation.get("ragas_llm") or {}
    ev = GenerationEvaluator(
        wanted, llm=judge, ragas_base_url=ragas_cfg.get("base_url"), ragas_model=ragas_cfg.get("model"),
        bertscore_model=cfg.evaluation.get("bertscore_model"),
        bertscore_layers=int(cfg.evaluation.get("bertscore_layers", 6)),
    )
    rows = [{"question": r["question"], "generated_answer": r["generated_answer"],
             "golden_answer": r["golden_answer"], "retrieved_context": r["retrieved_context"]} for r in todo]
    results = ev.evaluate(rows)
    for r, m in zip(todo, results, strict=True):
        r.setdefault("metrics", {}).update(m)
        r["generation_done"] = True
    return dict(getattr(ev, "skipped", {}) or {})
