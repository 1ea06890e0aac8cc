"""Endpoint credentials at rest: a SPARQL endpoint URL with ``user:password@`` or a secret query key
(``?api_key=…``) is masked in every record, name, identity and message — MLflow's params, tags and run names,
``outputs/runs/<id>/state.json``, ``hublab list`` and its ``--json``, a pipeline's ``repr``, error lines, and an
endpoint's error page that echoes the request's ``Authorization: Basic …`` or the password — and the credentials are
no part of what identifies the graph (the same endpoint reached with another password is the same graph).

One masking door: :func:`hublab.redact.scrub`. The last test runs ``hublab run`` against a real Oxigraph server
(slow tier) and searches every file the run wrote for the password, the key and the Basic token."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from hublab.api import LoadedPipeline
from hublab.config import Settings
from hublab.graph.endpoint import EndpointError, SparqlEndpoint
from hublab.redact import scrub

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-graph"
PASSWORD = "PLANTEDpw0secret77"
KEY = "PLANTEDapikey0abc99"
BASIC = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
PLANTED = (PASSWORD, KEY, BASIC)


def _no_secret(text: str) -> None:
    for s in PLANTED:
        assert s not in text, (s, text[:400])


class _Echo(BaseHTTPRequestHandler):
    """An endpoint that refuses every request with 401 and a page echoing the request: its Authorization header,
    the password it decoded from it, and the query string's key."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization", "")
        decoded = base64.b64decode(auth.split()[-1]).decode() if auth else ""
        body = (f"<html>401 Unauthorized. You sent Authorization: {auth}; user:password {decoded}; password "
                f"{decoded.partition(':')[2]} to {self.path}; key {self.path.rpartition('=')[2]}</html>").encode()
        self.send_response(401)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def echo_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_an_endpoint_error_page_echoing_the_basic_header_and_the_password_is_masked(echo_server: int):
    url = f"http://alice:{PASSWORD}@127.0.0.1:{echo_server}/query?api_key={KEY}"
    with pytest.raises(EndpointError) as err:
        SparqlEndpoint(url).fingerprint()
    text = str(err.value)
    assert "HTTP 401" in text and "Basic ***" in text and "127.0.0.1" in text
    _no_secret(text)
    _no_secret(scrub(f"any later text holding {PASSWORD} or {BASIC}"))  # registered: masked wherever it turns up


def test_the_one_masking_door_knows_basic_tokens_url_credentials_and_leaves_prose_alone():
    from hublab.redact import url_secrets

    assert scrub(f"Authorization: Basic {BASIC}") == "Authorization: Basic ***"
    assert scrub("Basic statistics of the graph") == "Basic statistics of the graph"  # not a user:password token
    assert scrub(f"http://alice:{PASSWORD}@h/q?api_key={KEY}&x=1") == "http://***@h/q?api_key=***&x=1"
    assert set(PLANTED) <= set(url_secrets(f"http://alice:{PASSWORD}@h/q?api_key={KEY}"))
    # the old second masker of storage URLs is gone: one door
    from hublab.tuning import storage

    assert not hasattr(storage, "redact_url")


def test_credentials_are_no_part_of_the_graphs_identity(tmp_path: Path):
    from hublab.experiment.request import RunRequest
    from hublab.pipeline.config import load_pipeline
    from hublab.redact import without_credentials

    a = f"http://alice:{PASSWORD}@127.0.0.1:7/query?api_key={KEY}&default-graph-uri=g"
    b = "http://bob:other-password@127.0.0.1:7/query?api_key=another-key&default-graph-uri=g"
    assert without_credentials(a) == without_credentials(b) == "http://127.0.0.1:7/query?default-graph-uri=g"
    assert without_credentials("gv3_orkg") == "gv3_orkg" and without_credentials("/a/b.ttl") == "/a/b.ttl"
    st = Settings(tmp_path, {})
    cfg = load_pipeline(ROOT / "pipelines" / "bm25.yaml")
    ra, rb = RunRequest(cfg, a, "q.csv", st), RunRequest(cfg, b, "q.csv", st)
    assert ra.config_hash == rb.config_hash
    _no_secret(ra.display_name() + ra.graph_shown + repr(ra.description("x").graph))


def test_repr_of_a_loaded_pipeline_and_of_a_graph_source_mask_the_url():
    from hublab.graph.source import GraphSource

    url = f"http://alice:{PASSWORD}@127.0.0.1:7/query?api_key={KEY}"
    _no_secret(repr(LoadedPipeline(object(), "bm25", url)))
    _no_secret(repr(GraphSource(url, "endpoint", url, "127_0_0_1-abc", "0" * 64)))


def test_hublab_list_masks_a_declared_endpoints_credentials(tmp_path: Path, monkeypatch):
    from conftest import invoke_cli
    from hublab.config import _load_params

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params.setdefault("user_graphs", {})["graphs"] = {
        "remote": {"source": f"http://alice:{PASSWORD}@127.0.0.1:7/query?api_key={KEY}"}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.setenv("HUBLAB_ROOT", str(tmp_path))
    _load_params.cache_clear()
    for args in (["list"], ["list", "--json"]):
        code, out, err = invoke_cli(args, env={"COLUMNS": "300"})
        assert code == 0, err
        assert "127.0.0.1:7" in out
        _no_secret(out + err)


@pytest.mark.slow
def test_a_run_over_an_endpoint_with_credentials_leaves_them_nowhere(oxigraph, tmp_path: Path):
    """``hublab run`` over a real endpoint with ``user:password@`` and ``?api_key=``: exit 0, and neither the
    password, the key nor the Basic token in the MLflow store, the run's folder, the index folder or the output;
    the same endpoint with another password resolves to the same graph name."""
    root = tmp_path / "project"
    (root / "pipelines").mkdir(parents=True)
    (root / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    (root / "pipelines" / "bm25.yaml").write_text((ROOT / "pipelines" / "bm25.yaml").read_text())
    (root / "questions.csv").write_bytes((EXAMPLE / "questions.csv").read_bytes())
    plain = oxigraph(EXAMPLE / "graph.ttl")
    url = plain.replace("http://", f"http://alice:{PASSWORD}@") + f"?api_key={KEY}"
    env = {**{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}, "HUBLAB_ROOT": str(root),
           "HF_HUB_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true", "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.run([sys.executable, "-m", "hublab.cli", "run", "bm25", "--graph", url, "--dataset",
                        "questions.csv", "--no-carbon", "--json"], cwd=root, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    _no_secret(p.stdout + p.stderr)
    out = json.loads(p.stdout[p.stdout.index("{"):])
    assert out["graph"].startswith("http://***@127.0.0.1:") and out["metrics"]["n_errors"] == 0
    scanned = 0
    for f in root.rglob("*"):
        if f.is_file():
            scanned += 1
            data = f.read_bytes()
            for s in PLANTED:
                assert s.encode() not in data, (s, f)
    assert scanned > 10 and (root / "mlruns" / "mlflow.db").is_file()
    assert list((root / "outputs" / "runs").glob("*/state.json"))

    import hublab

    loaded = hublab.load_pipeline("bm25", graph=url, root=root)
    assert loaded.retrieve("Who wrote 'Reproducible Pipelines for Knowledge Graph Experiments'?")
    assert "***@127.0.0.1" in repr(loaded)
    _no_secret(repr(loaded))

    from hublab.graph.backends import resolve_graph

    st = Settings(tmp_path, {"paths": {"graphs": "g", "snapshots": "s", "indices": "models", "cache": ".cache"}})
    other = plain.replace("http://", "http://bob:another-secret@") + "?api_key=another-key"
    assert resolve_graph(url, st).name == resolve_graph(other, st).name == resolve_graph(plain, st).name


def test_a_comparisons_key_holds_no_credential():
    from hublab.experiment.comparison.single_graph import comparison_key

    a = comparison_key(f"http://alice:{PASSWORD}@127.0.0.1:7/query?api_key={KEY}", "q.csv", [], None, None)
    assert a == comparison_key("http://bob:other@127.0.0.1:7/query?api_key=other", "q.csv", [], None, None)
    assert a == comparison_key("http://127.0.0.1:7/query", "q.csv", [], None, None)
    assert comparison_key("gv1", "gv1", [], None, None) != a


def test_a_short_password_with_an_at_sign_is_masked_in_the_endpoints_error_page(echo_server: int):
    """A password too short to be registered (``p@ss``), its ``@`` unencoded: masked in the URL shown and in the
    page that quotes it."""
    url = f"http://bob:p@ss@127.0.0.1:{echo_server}/query"
    assert scrub(url) == f"http://***@127.0.0.1:{echo_server}/query"
    with pytest.raises(EndpointError) as err:
        SparqlEndpoint(url).fingerprint()
    text = str(err.value)
    assert "HTTP 401" in text and "p@ss" not in text and base64.b64encode(b"bob:p@ss").decode() not in text


def test_masking_follows_the_environment_and_registered_keys_as_they_change(monkeypatch):
    """The secrets masked by value are remembered between calls (a run scrubs ~100,000 trace fields), yet a key
    exported, changed or removed since the last call is masked (or not) at once."""
    from hublab.redact import MASK, mask_known, register_secret

    monkeypatch.setenv("HUBLAB_TEST_API_KEY", "first-key-value")
    assert mask_known("a first-key-value b") == f"a {MASK} b"
    monkeypatch.setenv("HUBLAB_TEST_API_KEY", "second-key-value")
    assert mask_known("first-key-value second-key-value") == f"first-key-value {MASK}"
    monkeypatch.delenv("HUBLAB_TEST_API_KEY")
    assert mask_known("second-key-value") == "second-key-value"
    register_secret("registered-later-value")
    assert mask_known("x registered-later-value") == f"x {MASK}"
    assert mask_known("extra-only-value", ["extra-only-value"]) == MASK
    assert mask_known("extra-only-value") == "extra-only-value"
