"""Embedder, Milvus Lite store and LLM backends on real models/servers (local stub for OpenAI)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest

from hublab.embedding.factory import build_embedder
from hublab.errors import HubLabError, InputError
from hublab.llm.factory import build_llm
from hublab.vectorstore.factory import build_vector_store
from support.llm_servers import TEST_LLAMA_THREADS
from support.real_parts import need_module


@pytest.fixture(scope="session")
def embedder(minilm):
    return minilm  # the project default (all-MiniLM-L6-v2), the session's: loaded once


def test_embeddings_are_normalised_and_semantic(embedder):
    v = embedder.embed(["evaluation method case study", "a case study was used to evaluate", "chocolate cake"])
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3


def test_embedding_cache_embeds_unique_texts_once(embedder):
    before = embedder.model_calls
    embedder.embed(["unique text alpha", "unique text alpha", "unique text beta"])
    assert embedder.model_calls - before == 2
    again = embedder.embed(["unique text beta", "unique text alpha"])
    assert embedder.model_calls - before == 2 and again.shape == (2, 384)


def test_unknown_model_is_a_clear_error():
    with pytest.raises(HubLabError, match="never downloads"):
        build_embedder({"model": "sentence-transformers/all-mpnet-base-v2"})
    with pytest.raises(InputError):
        build_embedder({"modle": "x"})


def test_milvus_lite_filtered_search_query_delete(tmp_path, embedder):
    store = build_vector_store(None, tmp_path / "idx.db")
    texts = ["venue ICSA", "evaluation method case study", "research object reference architecture"]
    store.ensure_collection("c", embedder.dim)
    rows = [{"hub_root": r, "text": t} for r, t in zip(["R1", "R2", "R2"], texts, strict=True)]
    store.insert("c", embedder.embed(texts), rows)
    q = embedder.embed(["which papers used a case study"])
    hits = store.search("c", q, 3)[0]
    assert hits[0].fields["text"] == "evaluation method case study" and hits[0].score > hits[-1].score
    restricted = store.search("c", q, 3, filter='hub_root not in ["R2"]')[0]
    assert [h.fields["hub_root"] for h in restricted] == ["R1"]
    assert {r["text"] for r in store.query("c", filter='hub_root == "R2"', output_fields=["text"])} == set(texts[1:])
    store.delete("c", filter='hub_root == "R1"')
    assert store.count("c") == 2


class _Stub(BaseHTTPRequestHandler):
    mode = "ok"

    def log_message(self, *a):  # quiet
        pass

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Stub.last = body
        content = {"ok": '{"answer": "ICSA"}', "bad": "not json at all"}[_Stub.mode]
        if "response_format" not in body and _Stub.mode == "ok":
            content = "plain answer"
        payload = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                   "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content}}],
                   "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def stub_url():
    srv = HTTPServer(("127.0.0.1", 0), _Stub)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}/v1"
    srv.shutdown()


SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def test_openai_compatible_text_json_tokens_and_cache(stub_url, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-secret")
    _Stub.mode = "ok"
    llm = build_llm({"backend": "openai", "model": "m", "base_url": stub_url, "api_key_env": "MY_KEY",
                     "max_retries": 0}, cache_dir=tmp_path)
    assert llm.complete("hi").text == "plain answer"
    r = llm.complete("venue?", json_schema=SCHEMA)
    assert r.data == {"answer": "ICSA"} and r.error is None
    assert llm.usage.prompt_tokens == 22 and llm.usage.completion_tokens == 6
    cached = llm.complete("venue?", json_schema=SCHEMA)
    assert cached.cached and cached.data == {"answer": "ICSA"} and llm.usage.cached_calls == 1


def test_openai_malformed_json_and_unreachable_endpoint_degrade(stub_url):
    _Stub.mode = "bad"
    llm = build_llm({"backend": "openai", "model": "m", "base_url": stub_url, "max_retries": 0, "cache": False})
    r = llm.complete("venue?", json_schema=SCHEMA)
    assert r.data is None and "malformed JSON" in r.error
    dead = build_llm({"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "max_retries": 0,
                      "timeout_s": 2, "cache": False})
    r = dead.complete("x")
    assert r.text == "" and r.error


def test_llm_free_backend():
    llm = build_llm({"backend": "none"})
    assert llm.is_llm_free and llm.complete("x").error
    with pytest.raises(InputError):
        build_llm({"backend": "none", "base_url": "http://x"})


@pytest.mark.llama
def test_embedded_llamacpp_grammar_json(tmp_path):
    need_module("llama_cpp")
    llm = build_llm({"backend": "llamacpp", "cache": False, "n_threads": TEST_LLAMA_THREADS})
    r = llm.complete("Is Paris in France? Reply as JSON.", json_schema=SCHEMA, max_tokens=80)
    assert r.error is None and isinstance(r.data["answer"], str) and r.prompt_tokens > 0


def test_restricted_search_is_complete_after_updates(tmp_path, embedder):
    """Milvus Lite post-filters its ANN top-k (and counts deleted rows in it); our exact path must return
    every matching row of the restricted hubs, also after an in-place update with deletes."""
    store = build_vector_store(None, tmp_path / "r.db")
    texts = [f"fact {i} about topic {i % 7}" for i in range(300)]
    vecs = embedder.embed(texts)
    rows = [{"hub_root": f"R{i % 30}", "gen": "a", "text": t} for i, t in enumerate(texts)]
    store.ensure_collection("c", embedder.dim)
    store.insert("c", vecs, rows)
    store.insert("c", vecs, [dict(r, gen="b") for r in rows])  # re-index: new generation, then delete the old
    store.delete("c", filter='gen != "b"')
    q = embedder.embed(["topic 3"])
    hits = store.search("c", q, 1000, filter='hub_root in ["R1", "R2"]')[0]
    assert len(hits) == 20 and {h.fields["hub_root"] for h in hits} == {"R1", "R2"}
    assert len(store.search("c", q, 1000)[0]) == 300
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:], strict=False))
