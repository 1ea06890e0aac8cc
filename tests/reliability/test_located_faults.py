"""Faults that ended in a traceback, a silent exit or debris, each now one located line (file, row or field, what
was expected), exit != 0, nothing written: malformed fingerprint answers of an endpoint; ``report compare --out``
under /proc or onto a file (refused before any run); a damaged ``reports/eval/*/metrics.json``; a plugin method
declaring keyword-only parameters; rdflib's logged traceback per ill-typed literal (one warning line with the count);
a 400-character ``--experiment`` (refused before any work, not an ``OSError`` from the artifact-folder probe);
SIGTERM before a run starts (one line, exit 143, as docs/reliability.md says); and no empty
``models/<graph>__bm25/`` left by a method that keeps no index."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-graph"


def _cli(args: list[str]) -> tuple[int, str]:
    from conftest import invoke_cli

    code, out, err = invoke_cli(args, env={"COLUMNS": "300"})
    return code, out + err


def _one_error_line(text: str) -> str:
    assert "Traceback" not in text, text[-2000:]
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, text[-2000:]
    return errors[0]


@pytest.fixture()
def project(tmp_path: Path, shared: Path, monkeypatch) -> Path:
    """A project with the shipped pipelines and the example graph and questions, nothing built."""
    from conftest import pipelines_project

    root = pipelines_project(tmp_path / "proj", shared, monkeypatch)
    for f in ("graph.ttl", "questions.csv"):
        (root / f).write_bytes((EXAMPLE / f).read_bytes())
    return root


class _Answers(BaseHTTPRequestHandler):
    """A SPARQL endpoint whose every answer is ``body`` (set per test)."""

    body = b""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def answering() -> Iterator[type[_Answers]]:
    handler = type("Answers", (_Answers,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    handler.url = f"http://127.0.0.1:{server.server_address[1]}/query"  # type: ignore[attr-defined]
    yield handler
    server.shutdown()
    server.server_close()


def _bindings(rows: object) -> bytes:
    return json.dumps({"head": {"vars": ["n", "a", "b"]}, "results": {"bindings": rows}}).encode()


@pytest.mark.parametrize("body", [
    _bindings([{"n": {"type": "literal", "value": "abc"}}]),  # ValueError
    _bindings([{"n": {"type": "literal", "value": "1e400"}}]),  # OverflowError (inf)
    _bindings([{"n": {"type": "literal", "value": "-4"}}]),  # silently a negative count
    _bindings([{"n": {"type": "literal", "value": "2.5"}}]),  # silently 2
    _bindings([{"n": {"type": "literal", "value": "9" * 40}}]),  # more triples than any endpoint holds
    _bindings(["n"]),  # AttributeError: a binding that is not an object
    _bindings([{"n": {"type": "literal"}}]),  # a binding without its value
    _bindings([{"a": {"type": "literal", "value": "1"}}]),  # the count missing
], ids=["text", "inf", "negative", "fraction", "huge", "not-an-object", "no-value", "no-count"])
def test_a_malformed_fingerprint_answer_is_one_located_line(answering, project: Path, body: bytes):
    answering.body = body
    code, text = _cli(["graph", "check", answering.url])
    line = _one_error_line(text)
    assert code == 2 and "SPARQL endpoint http://127.0.0.1:" in line, text[-2000:]


@pytest.mark.parametrize("where", ["/proc/hublab-compare", "a-file"])
def test_report_compare_out_that_cannot_be_written_is_refused_before_any_run(project: Path, where: str):
    out = Path(where) if where.startswith("/") else project / where
    if where == "a-file":
        out.write_text("mine\n")
    code, text = _cli(["report", "compare", "--graph", "graph.ttl", "--dataset", "questions.csv", "--pipelines",
                       "bm25", "--out", str(out)])
    line = _one_error_line(text)
    assert code == 2 and "--out" in line and str(out) in line
    assert not (project / "outputs").exists() and not (project / "mlruns" / "mlflow.db").exists()
    if where == "a-file":
        assert out.read_text() == "mine\n"


@pytest.mark.parametrize("where", ["/proc/hublab-summary", "a-file", "a-file/below"])
def test_report_summary_out_that_cannot_be_written_is_one_line(project: Path, where: str):
    out = Path(where) if where.startswith("/") else project / where
    if where.startswith("a-file"):
        (project / "a-file").write_text("mine\n")
    code, text = _cli(["report", "summary", "--out", str(out)])
    line = _one_error_line(text)
    assert code == 2 and "--out" in line and str(out) in line
    if where.startswith("a-file"):
        assert (project / "a-file").read_text() == "mine\n"


@pytest.mark.parametrize("damage", [b"{not json", b"[1, 2]", b'{"n_questions": "many"}', b'{"n_errors": NaN}',
                                    b"\xff\xfe\x00"], ids=["syntax", "list", "text-count", "nan-count", "binary"])
def test_a_damaged_metrics_json_is_one_line_naming_the_file(project: Path, damage: bytes):
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["evaluate"]["runs"] = [{"pipeline": "bm25", "retriever": "bm25", "graph": "gv1", "dataset": "gv1"}]
    (project / "params.yaml").write_text(yaml.safe_dump(params))
    from hublab.config import _load_params

    _load_params.cache_clear()
    metrics = project / "reports" / "eval" / "bm25-gv1" / "metrics.json"
    metrics.parent.mkdir(parents=True)
    metrics.write_bytes(damage)
    code, text = _cli(["report", "summary", "--out", str(project / "summary")])
    line = _one_error_line(text)
    assert code == 2 and f"file {metrics}" in line
    assert not (project / "summary").exists()


def test_a_400_character_experiment_name_is_refused_in_one_line_before_any_work(project: Path):
    (project / "mlruns" / "artifacts").mkdir(parents=True)
    code, text = _cli(["run", "bm25", "--graph", "graph.ttl", "--dataset", "questions.csv", "--no-carbon",
                       "--experiment", "x" * 400])
    line = _one_error_line(text)
    assert code == 2 and "--experiment" in line and "400 characters" in line
    assert not (project / "outputs").exists() and not (project / "mlruns" / "mlflow.db").exists()


@pytest.mark.slow
def test_a_bm25_run_leaves_no_empty_index_folder(project: Path):
    code, text = _cli(["run", "bm25", "--graph", "graph.ttl", "--dataset", "questions.csv", "--no-carbon"])
    assert code == 0, text[-3000:]
    models = project / "models"
    empty = [p.name for p in models.iterdir() if p.is_dir() and not any(p.iterdir())] if models.exists() else []
    assert empty == []


def _env(root: Path, *extra_path: Path) -> dict[str, str]:
    path = os.pathsep.join(str(p) for p in (*extra_path, ROOT / "src"))
    return {**{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}, "HUBLAB_ROOT": str(root),
            "HF_HUB_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true", "PYTHONPATH": path}


@pytest.mark.slow
def test_a_plugin_declaring_keyword_only_parameters_is_one_located_line(project: Path, tmp_path: Path):
    """An installed plugin (entry point ``hublab.retrievers``) whose ``__init__`` takes keyword-only parameters."""
    site = tmp_path / "site"
    (site / "kwplugin").mkdir(parents=True)
    (site / "kwplugin" / "__init__.py").write_text(
        "from hublab.retrievers.base import RetrievalResult, Retriever\n\n\n"
        "class OldStyle(Retriever):\n"
        "    def __init__(self, resources, *, n_results: int = 20, **params) -> None:\n"
        "        super().__init__(resources, **params)\n\n"
        "    def _retrieve(self, question, topic_entity_id, topic_entity_value):\n"
        "        return RetrievalResult()\n")
    meta = site / "kwplugin-0.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: kwplugin\nVersion: 0.1\n")
    (meta / "entry_points.txt").write_text("[hublab.retrievers]\nkw_only = kwplugin:OldStyle\n")
    (project / "pipelines" / "kw.yaml").write_text(yaml.safe_dump({"name": "kw", "retriever": {"type": "kw_only"}}))
    p = subprocess.run([sys.executable, "-m", "hublab.cli", "run", "pipelines/kw.yaml", "--graph", "graph.ttl",
                        "--dataset", "questions.csv", "--no-carbon"], cwd=project, env=_env(project, site),
                       capture_output=True, text=True, timeout=300)
    line = _one_error_line(p.stderr + p.stdout)
    assert p.returncode == 2 and "keyword-only parameters ['n_results']" in line and "params_type" in line
    assert not (project / "outputs").exists()


@pytest.mark.slow
def test_ill_typed_literals_are_one_warning_line_with_their_count(project: Path):
    bad = project / "typed.ttl"
    bad.write_text('@prefix ex: <https://example.org/> .\n@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n'
                   '@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n'
                   'ex:a rdfs:label "A" ; ex:n "abc"^^xsd:integer ; ex:m "1x"^^xsd:integer .\n'
                   'ex:b rdfs:label "B" ; ex:d "not a date"^^xsd:date ; ex:r ex:a .\n')
    p = subprocess.run([sys.executable, "-m", "hublab.cli", "graph", "check", str(bad)], cwd=project,
                       env=_env(project), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Traceback" not in p.stderr and "Failed to convert" not in p.stderr
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"warning: {bad}: 3 literal(s)"), p.stderr


@pytest.mark.slow
def test_sigterm_before_a_run_starts_is_one_line_and_exit_143(project: Path):
    """SIGTERM while the run is still checking its inputs (an endpoint that never answers its first request)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    silent.settimeout(120)
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/query"
    p = subprocess.Popen([sys.executable, "-m", "hublab.cli", "run", "bm25", "--graph", url, "--dataset",
                          "questions.csv", "--no-carbon"], cwd=project, env=_env(project), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        conn, _ = silent.accept()  # the fingerprint request: the command is running, no run has started
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        conn.close()
    finally:
        if p.poll() is None:
            p.kill()
        silent.close()
    assert p.returncode == 143, (p.returncode, err[-2000:])
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("interrupted (SIGTERM)"), err
    assert not (project / "outputs").exists()
