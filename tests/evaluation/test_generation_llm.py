"""LLM-judged generation metrics through the embedded model: the instruction-following judge via the HubLab
LLM layer, and RAGAS faithfulness via a local OpenAI-compatible llama.cpp server. A 270M base model's scores
mean nothing; these tests prove the wiring produces real judged values (not skips, not crashes)."""

from __future__ import annotations

import pytest

from hublab.evaluation.generation import GenerationEvaluator
from support.llm_servers import TEST_LLAMA_THREADS
from support.real_parts import need_module

ROW = {"question": "In which venue was the paper 'X' published?",
       "generated_answer": "The paper X was published at ICSA.",
       "golden_answer": "X was published at the International Conference on Software Architecture (ICSA).",
       "retrieved_context": ["(R1:X, venue, R2:International Conference on Software Architecture (ICSA))"]}


def test_llm_judged_metrics_are_skipped_not_zero_without_a_judge():
    ev = GenerationEvaluator(["instruction_following", "faithfulness", "bleu"])
    out = ev.evaluate([ROW])[0]
    assert out["instruction_following"] is None and out["faithfulness"] is None
    assert set(ev.skipped) == {"instruction_following", "faithfulness"} and out["bleu_score"] > 0


@pytest.mark.llama
def test_instruction_following_judge_with_embedded_llm():
    need_module("llama_cpp")
    from hublab.llm.factory import build_llm

    ev = GenerationEvaluator(["instruction_following"], llm=build_llm({"backend": "llamacpp", "cache": False,
                                                                           "n_threads": TEST_LLAMA_THREADS}))
    out = ev.evaluate([ROW])[0]
    assert out["instruction_following"] in (0.0, 1.0) and not ev.skipped


@pytest.mark.llama
def test_ragas_faithfulness_through_local_openai_compatible_server(llama_server):
    ev = GenerationEvaluator(["faithfulness"], ragas_base_url=llama_server, ragas_model="gemma3-270m")
    out = ev.evaluate([ROW])[0]
    assert not ev.skipped
    assert out["faithfulness"] is not None and 0.0 <= out["faithfulness"] <= 1.0
