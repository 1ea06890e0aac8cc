"""The optional pipes send the thesis's Listings A.5 (augmentation), A.6 (rerank) and A.7 (generation) as printed,
over HTTP to a local server that records every request body, and read the formats those listings ask for: the
augmented question as plain text, a bare list of context IDs, free text. A reply without the format is an LLM
error: the pipe keeps the previous stage's output and records the fall-back."""

from __future__ import annotations

from types import SimpleNamespace

from hublab.llm.factory import build_llm
from hublab.pipeline import prompts
from hublab.pipeline.config import PipelineConfig
from hublab.pipeline.pipeline import Pipeline
from hublab.retrievers.base import Context, RetrievalResult

QUESTION = "Which papers were published by SpringerLink in 2020?"
AUGMENTED = "Which papers (publications) were published by the publisher SpringerLink in the year 2020?"
CONTEXTS = ["(Paper A, publisher, SpringerLink)", "(Paper B, publication year, 2019)",
            "(Paper A, publication year, 2020)"]


class FixedRetriever:
    """Returns the same three graph contexts for any question and records the question it was given."""

    def __init__(self) -> None:
        self.resources = SimpleNamespace(llm=None)
        self.questions: list[str] = []

    def retrieve(self, question, topic_entity_id=None, topic_entity_value=None) -> RetrievalResult:
        self.questions.append(question)
        return RetrievalResult(contexts=[Context(c) for c in CONTEXTS])


def _pipeline(base_url: str) -> tuple[Pipeline, FixedRetriever, object]:
    llm = build_llm({"backend": "openai", "model": "m", "base_url": base_url, "max_retries": 0, "cache": False})
    cfg = PipelineConfig(name="pipes", retriever_type="fixed", pre_retrieval={"enabled": True},
                         post_retrieval={"enabled": True}, generation={"enabled": True})
    retriever = FixedRetriever()
    pipes = {"pre_retrieval": llm, "post_retrieval": llm, "generation": llm}
    return Pipeline(cfg, retriever, pipe_llms=pipes), retriever, llm  # type: ignore[arg-type]


def _reply(rerank: str):
    def reply(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        if "**Original Question:**" in prompt:
            return f'"{AUGMENTED}"'  # models echo the quotes the listing puts around the question
        if "**Re-Ranked Contexts:**" in prompt:
            return rerank
        return "Paper A was published by SpringerLink in 2020."
    return reply


def test_pipes_send_listings_a5_a6_a7_and_read_their_formats(fault_server):
    fault_server.reply = _reply("[2, 0]")
    pipeline, retriever, llm = _pipeline(fault_server.base_url)
    out = pipeline.run(QUESTION)
    assert retriever.questions == [AUGMENTED] and out.retrieval_question == AUGMENTED
    assert [c.text for c in out.contexts] == [CONTEXTS[2], CONTEXTS[0], CONTEXTS[1]]  # listed IDs first, rest after
    assert out.answer == "Paper A was published by SpringerLink in 2020." and out.fallbacks == []
    augment, rerank, generate = fault_server.requests
    assert augment["messages"] == [{"role": "user", "content": prompts.AUGMENT.format(original_question=QUESTION)}]
    mapping = "\n".join(f"{i}: {c}" for i, c in enumerate(CONTEXTS))  # A.6's "ID: context" mapping
    assert rerank["messages"] == [{"role": "user",
                                   "content": prompts.RERANK.format(question=AUGMENTED, contexts=mapping)}]
    assert rerank["response_format"]["json_schema"]["schema"] == {"type": "array", "items": {"type": "integer"}}
    context = "\n".join(c.text for c in out.contexts)
    assert generate["messages"] == [{"role": "user", "content": prompts.GENERATE.format(
        context_explanation=prompts.KG_CONTEXT_EXPLANATION, context=context, question=QUESTION)}]
    assert "The context is retrieved from a knowledge graph." in generate["messages"][0]["content"]
    assert "response_format" not in augment and "response_format" not in generate  # free-text listings
    assert llm.usage.calls == 3 and llm.usage.errors == 0


def test_rerank_reply_without_an_id_list_keeps_the_order_and_is_an_llm_error(fault_server):
    fault_server.reply = _reply("The third context is the most relevant.")
    pipeline, _, llm = _pipeline(fault_server.base_url)
    out = pipeline.run(QUESTION)
    assert [c.text for c in out.contexts] == CONTEXTS
    assert len(out.fallbacks) == 1 and out.fallbacks[0].startswith("post_retrieval: rerank skipped: malformed JSON")
    assert llm.usage.errors == 1


def test_empty_augmentation_keeps_the_original_question(fault_server):
    fault_server.reply = lambda body: '  ""  ' if "**Original Question:**" in body["messages"][0]["content"] else "[]"
    pipeline, retriever, _ = _pipeline(fault_server.base_url)
    out = pipeline.run(QUESTION)
    assert retriever.questions == [QUESTION]
    assert out.fallbacks[0] == "pre_retrieval: empty answer"
