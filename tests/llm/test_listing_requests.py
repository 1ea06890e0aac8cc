"""What a server receives for the thesis's structured listings (A.3 components, A.4 triple filter, A.6 rerank):
the prompt exactly as printed, no appended format instruction, and the listing's own output format (a bare list)
as the only constraint, on the wire (``FaultServer`` records request bodies) and against the real llama.cpp
server, which enforces a bare-array schema by grammar. OpenAI endpoints cannot constrain a bare array (structured
output and json_object mode both force an object): they get the prompt as printed and no response_format."""

from __future__ import annotations

import pytest

from hublab.llm.factory import build_llm
from hublab.pipeline import prompts as pipe_prompts
from hublab.retrievers.methods.hublink import prompts
from hublab.retrievers.methods.hublink.answer import llm_filter
from hublab.retrievers.methods.hublink.question import process_question
from support.baseline_support import make_embedder

QUESTION = "Which papers have been published by SpringerLink in 2020?"
TRIPLES = [("(R1:Paper A, publisher, L1:SpringerLink)", 0.9), ("(R1:Paper A, publication year, L2:2020)", 0.8),
           ("(R1:Paper A, research method, L3:case study)", 0.4)]


def _http_llm(base_url: str, **kw):
    return build_llm({"backend": "openai", "model": "gemma3-270m", "base_url": base_url, "max_retries": 0,
                      "cache": False, **kw})


def _only_the_prompt(body: dict, prompt: str) -> None:
    """The request's messages are the listing's prompt and nothing else (no system text, nothing appended)."""
    assert body["messages"] == [{"role": "user", "content": prompt}]


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    return make_embedder(tmp_path_factory.mktemp("emb"))


def test_a3_components_request_is_the_listing_and_its_bare_list(fault_server, embedder):
    fault_server.reply = "['Publisher', 'SpringerLink', '2020']"  # the listing's own format: a python list
    llm = _http_llm(fault_server.base_url)
    pq = process_question(QUESTION, embedder, llm=llm, vocab=None, extract_components=True)
    assert pq.components == ["Publisher", "SpringerLink", "2020"] and pq.fallbacks == []
    (body,) = fault_server.requests
    _only_the_prompt(body, prompts.COMPONENTS.format(question=QUESTION))
    assert "Reply with JSON" not in body["messages"][0]["content"]
    fmt = body["response_format"]  # the local family's first format: a json_schema that is the bare list
    assert fmt == {"type": "json_schema", "json_schema": {"name": "answer", "schema": prompts.COMPONENTS_SCHEMA}}
    assert prompts.COMPONENTS_SCHEMA == {"type": "array", "items": {"type": "string"}}


def test_a4_filter_request_is_the_listing_and_prose_around_the_list_is_parsed(fault_server):
    fault_server.reply = "The relevant triples are:\n[0, 1]"
    llm = _http_llm(fault_server.base_url)
    kept, why = llm_filter(QUESTION, "Paper A.", TRIPLES, llm)
    assert why is None and [t for t, _ in kept] == [TRIPLES[0][0], TRIPLES[1][0]]
    (body,) = fault_server.requests
    listing = ("0: (Paper A, publisher, SpringerLink)\n1: (Paper A, publication year, 2020)\n"
               "2: (Paper A, research method, case study)")  # "ID: (subject, predicate, object)", as A.4 says
    _only_the_prompt(body, prompts.FILTER.format(question=QUESTION, answer="Paper A.", contexts=listing))
    assert body["response_format"]["json_schema"]["schema"] == {"type": "array", "items": {"type": "integer"}}


def test_a4_reply_without_an_id_list_is_an_llm_error(fault_server):
    fault_server.reply = "Triples 0 and 1 are relevant."
    llm = _http_llm(fault_server.base_url)
    kept, why = llm_filter(QUESTION, "Paper A.", TRIPLES, llm)
    assert kept is None and why.startswith("malformed JSON")
    assert llm.usage.errors == 1 and llm.usage.calls == 1


def test_openai_endpoints_get_the_listing_as_printed_and_no_format():
    for model in ("gpt-4o-mini", "o3-mini"):
        llm = build_llm({"backend": "openai", "model": model})
        for prompt, schema in ((prompts.COMPONENTS.format(question=QUESTION), prompts.COMPONENTS_SCHEMA),
                               (prompts.FILTER.format(question=QUESTION, answer="a", contexts="0: (a, b, c)"),
                                prompts.FILTER_SCHEMA),
                               (pipe_prompts.RERANK.format(question=QUESTION, contexts="0: a"),
                                pipe_prompts.RERANK_SCHEMA)):
            body = llm.request_body(prompt, json_schema=schema, max_tokens=64)
            _only_the_prompt(body, prompt)
            assert "response_format" not in body
    # the project's own JSON prompts (object schemas) still get structured output and the schema spelled out
    obj = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    body = build_llm({"backend": "openai", "model": "gpt-4o-mini"}).request_body("q", json_schema=obj)
    assert body["response_format"]["type"] == "json_schema" and '"answer"' in body["messages"][0]["content"]


@pytest.mark.llama
def test_llama_cpp_server_enforces_the_listings_bare_lists(llama_server, embedder):
    llm = _http_llm(llama_server, max_tokens=64, timeout_s=120, max_retries=1)
    pq = process_question(QUESTION, embedder, llm=llm, vocab=None, extract_components=True)
    assert pq.fallbacks == [], pq.fallbacks  # the reply was the listing's list (the 270M model may leave it empty)
    r = llm.complete(prompts.COMPONENTS.format(question=QUESTION), json_schema=prompts.COMPONENTS_SCHEMA,
                     max_tokens=64)
    assert r.error is None and r.text.lstrip().startswith("[") and isinstance(r.data, list)
    assert all(isinstance(c, str) for c in r.data)
    kept, why = llm_filter(QUESTION, "Paper A was published by SpringerLink in 2020.", TRIPLES, llm)
    assert why is None and kept is not None and {t for t, _ in kept} <= {t for t, _ in TRIPLES}
    r = llm.complete(pipe_prompts.RERANK.format(question=QUESTION, contexts="0: a\n1: b"),
                     json_schema=pipe_prompts.RERANK_SCHEMA, max_tokens=32)
    assert r.error is None and isinstance(r.data, list) and all(isinstance(i, int) for i in r.data)
    assert llm.usage.errors == 0
