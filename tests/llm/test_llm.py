"""OpenAI-compatible backend against a local stub: timeout, json_schema → json_object fallback, retries on
malformed JSON, cache shared across instances, no key leakage; and the llama.cpp OpenAI-compatible server."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hublab.llm.factory import build_llm
from support.real_parts import need_module

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


class _Script(BaseHTTPRequestHandler):
    """Answers each POST with the next scripted reply: ("ok", content) | ("400", msg) | ("sleep", seconds)."""

    script: list[tuple[str, object]] = []
    requests: list[dict] = []

    def log_message(self, *a):  # quiet
        pass

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Script.requests.append(body)
        kind, arg = _Script.script.pop(0) if _Script.script else ("ok", "")
        if kind == "sleep":
            time.sleep(float(arg))
            kind, arg = "ok", "late"
        if kind == "400":
            status, payload = 400, {"error": {"message": arg, "type": "invalid_request_error"}}
        else:
            status = 200
            payload = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": arg}}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout case)
            pass


@pytest.fixture()
def stub():
    _Script.script, _Script.requests = [], []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Script)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}/v1"
    srv.shutdown()


def _llm(url, **kw):
    return build_llm({"backend": "openai", "model": "m", "base_url": url, "max_retries": 0, "cache": False, **kw})


def test_timeout_is_an_error_response_not_an_exception(stub):
    _Script.script = [("sleep", 3)]
    r = _llm(stub, timeout_s=0.5).complete("slow?")
    assert r.text == "" and "Timeout" in r.error


def test_json_schema_rejected_falls_back_to_json_object(stub):
    _Script.script = [("400", "response_format json_schema is not supported"), ("ok", '{"answer": "ICSA"}')]
    r = _llm(stub).complete("venue?", json_schema=SCHEMA)
    assert r.error is None and r.data == {"answer": "ICSA"}
    kinds = [q["response_format"]["type"] for q in _Script.requests]
    assert kinds == ["json_schema", "json_object"]
    assert '"answer"' in _Script.requests[-1]["messages"][-1]["content"]  # schema also given in the prompt


def test_malformed_json_is_retried_up_to_max_retries(stub):
    _Script.script = [("ok", "Sure! here it is: {answer: ICSA"), ("ok", '```json\n{"answer": "ICSA"}\n```')]
    llm = _llm(stub, max_retries=1, retry_backoff_s=0)
    r = llm.complete("venue?", json_schema=SCHEMA)
    assert r.data == {"answer": "ICSA"} and len(_Script.requests) == 2
    assert r.prompt_tokens == 10 and llm.usage.completion_tokens == 4  # both attempts are paid for
    _Script.script = [("ok", '{"other": 1}'), ("ok", '{"other": 2}'), ("ok", '{"answer": "x"}')]
    bad = llm.complete("again?", json_schema=SCHEMA)
    assert bad.data is None and bad.error.startswith("malformed JSON") and len(_Script.requests) == 4
    assert r.retries == 1 and bad.retries == 1 and llm.usage.retries == 2 and llm.usage.errors == 1


def test_cache_is_shared_across_instances_and_keyed_by_prompt(stub, tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_KEY", "sk-do-not-leak-123")
    _Script.script = [("ok", "first"), ("ok", "second")]
    cfg = {"backend": "openai", "model": "m", "base_url": stub, "api_key_env": "STUB_KEY", "max_retries": 0}
    a = build_llm(cfg, cache_dir=tmp_path)
    assert a.complete("q1").text == "first"
    b = build_llm(cfg, cache_dir=tmp_path)
    hit = b.complete("q1")
    assert hit.cached and hit.text == "first" and hit.prompt_tokens == 5 and len(_Script.requests) == 1
    assert b.complete("q1", max_tokens=7).text == "second"  # different key → a real call
    assert b.usage.cached_calls == 1 and b.usage.calls == 2
    assert "sk-do-not-leak" not in repr(a) + repr(b)
    assert b"sk-do-not-leak" not in (tmp_path / "llm" / "cache.sqlite").read_bytes()


def test_an_answer_that_echoes_the_key_holds_it_nowhere(stub, tmp_path, monkeypatch, caplog):
    """Issue #45, class 1: against an endpoint that echoes the Authorization header, the cache stored ``Bearer
    sk-…`` in clear, and the answer carried it on into path texts, index rows and predictions. One scrubber
    (``hublab.redact.scrub``) now masks a key of any shape (here one no pattern knows, in a variable whose name does
    not look secret) and a bearer token in the answer as it arrives, so the cache, every file written atomically
    and every log record are clean too."""
    import logging

    from hublab.atomic import write_text_atomic
    from hublab.redact import scrub_log_records

    key = "plain-key-value-42"
    monkeypatch.setenv("STUB_KEY", key)
    _Script.script = [("ok", f"you sent Authorization: Bearer {key} and sk-proj-abcdefgh12345 too")]
    cfg = {"backend": "openai", "model": "m", "base_url": stub, "api_key_env": "STUB_KEY", "max_retries": 0}
    r = build_llm(cfg, cache_dir=tmp_path).complete("echo?")
    assert key not in r.text and "sk-proj-abcdefgh" not in r.text and "***" in r.text  # the live answer too
    stored = b"".join(f.read_bytes() for f in sorted((tmp_path / "llm").iterdir()))  # the database and its WAL
    assert key.encode() not in stored and b"sk-proj-abcdefgh" not in stored and b"***" in stored
    again = build_llm(cfg, cache_dir=tmp_path).complete("echo?")
    assert again.cached and key not in again.text
    write_text_atomic(tmp_path / "out.json", f'{{"said": "{key}"}}')  # a report, a manifest, a tuned config
    assert key not in (tmp_path / "out.json").read_text()
    scrub_log_records()
    with caplog.at_level(logging.WARNING, logger="hublab.test"):
        logging.getLogger("hublab.test").warning("the endpoint said %s", key)
    assert caplog.records and all(key not in rec.getMessage() for rec in caplog.records)


@pytest.mark.llama
def test_llamacpp_server_is_openai_compatible_and_stops():
    need_module("llama_cpp")
    need_module("llama_cpp.server")
    import urllib.request

    from openai import OpenAI

    from hublab.llm.llamacpp import serve_llamacpp

    with serve_llamacpp(n_ctx=512) as url:
        out = OpenAI(base_url=url, api_key="local", max_retries=0).completions.create(
            model="gemma3-270m", prompt="The three primary colors are", max_tokens=8, temperature=0)
        assert out.usage.completion_tokens > 0 and isinstance(out.choices[0].text, str)
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/models", timeout=2)


def test_embedded_llamacpp_cap_counts_in_the_cache_key_as_the_effective_limit():
    """``llm.max_tokens`` on the embedded backend caps each call's limit (it was accepted and ignored): a cap at or
    above a call's own limit changes nothing, so such calls keep their cache keys; a lower cap is a new key."""
    from hublab.llm.factory import build_llm

    def key(cap, step):
        cfg = {"backend": "llamacpp", "cache": False, **({"max_tokens": cap} if cap else {})}
        return build_llm(cfg).cache_identity("p", json_schema=None, max_tokens=step, system=None)

    assert key(None, 64) == key(512, 64) and key(None, 64)["max_tokens"] == 64
    assert key(32, 64)["max_tokens"] == 32 and key(32, 64) != key(None, 64)
