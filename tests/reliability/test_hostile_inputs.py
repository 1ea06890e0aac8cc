"""Hostile and careless input (issue #20): every case is refused before any work — one ``error:`` line per
problem naming file, line/row and field, exit 2, no traceback, nothing left behind (no run folder, no MLflow
store) — and a credential typed or pasted anywhere never reaches the console, MLflow or an artifact.

Runs the real CLI in-process (``typer.testing.CliRunner``; a ``HubLabError`` is printed by the same
``hublab.cli.report`` the console script uses) on a 10-paper, 10-question project. docs/reliability.md lists
the cases."""

from __future__ import annotations

import dataclasses
import fcntl
import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from reliability import killing as K

SECRET = "sk-proj-PLANTED0secret0value0123456789"
URL_PASS = "PLANTEDurlpass99"
CRED_URL = f"http://admin:{URL_PASS}@127.0.0.1:9/v1"
BEARER = "Bearer PLANTEDbearer0token0abcdef"
QUERY_KEY = "PLANTEDquerykey0abc123"  # a key in a URL's query string or fragment (issue #29, class 3)
FORBIDDEN = (SECRET, URL_PASS, "PLANTEDbearer0token0abcdef", QUERY_KEY)
INJECT = Path(__file__).resolve().parents[1] / "platform" / "inject"  # HUBLAB_TEST_QUESTION_DELAY (sitecustomize)


def assert_found_nowhere(project: Path, planted) -> None:
    """No planted value in any file the run wrote (MLflow store, outputs, reports, --output), over >10 files."""
    scanned = 0
    for folder in ("mlruns", "outputs", "reports", "out"):
        for f in (project / folder).rglob("*"):
            if f.is_file():
                data = f.read_bytes()
                scanned += 1
                for s in planted:
                    assert s.encode() not in data, (s, f)
    assert scanned > 10


@pytest.fixture(scope="module")
def base(tmp_path_factory, shared: Path, gv3_orkg_graph) -> Path:
    root = K.build_project(tmp_path_factory.mktemp("hostile") / "base", shared, gv3_orkg_graph)
    (root / "pipelines" / "bm25.yaml").write_text((K.REPO / "pipelines" / "bm25.yaml").read_text())
    return root


@pytest.fixture()
def project(base: Path, tmp_path: Path, monkeypatch) -> Path:
    from hublab.config import _load_params

    root = tmp_path / "proj"
    shutil.copytree(base, root, symlinks=True)
    monkeypatch.setenv("HUBLAB_ROOT", str(root))
    monkeypatch.chdir(root)
    _load_params.cache_clear()
    return root


def invoke(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """``hublab ARGS`` in-process: (exit code, stdout + stderr) as the console script would give them."""
    from conftest import invoke_cli

    code, out, err = invoke_cli(args, env)
    return code, out + err


def _yaml(p: Path, text: str) -> str:
    (p / "bad.yaml").write_text(text)
    return "bad.yaml"


def _run(pipeline: str, *extra: str) -> list[str]:
    return ["run", pipeline, "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--no-carbon", *extra]


def _csv_rows(shared: Path, n: int = 3) -> list[str]:
    lines = (shared / "data/kgqa/flat_distributed.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    return lines[: n + 1]  # header + n rows (no quoted newlines in the first rows of this file)


def _bad_byte_csv(p: Path) -> str:
    from conftest import SHARED

    rows = _csv_rows(SHARED)
    rows[2] = rows[2].replace("Which", "Wh\udcffich", 1) if "Which" in rows[2] else rows[2].replace(",", ",\udcff", 2)
    (p / "rows.csv").write_bytes("".join(rows).encode("utf-8", "surrogateescape"))
    return "rows.csv"


def _alias_bomb(levels: int = 9) -> str:
    """A billion-laughs document: each level a list of nine aliases of the one before (9**levels values)."""
    lines = ["retriever: {type: bm25}", "tuned:", "  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def _fifo(p: Path, name: str) -> str:
    os.mkfifo(p / name)  # nobody writes it: reading it would block for ever
    return name


def _deep_jsonl(p: Path, shared: Path | None = None) -> str:
    import json

    from conftest import SHARED

    rows = (SHARED / "data/kgqa/flat_distributed.csv").read_text(encoding="utf-8").splitlines()[1:2]
    uid = rows[0].split(",", 1)[0]
    ok = json.dumps({"uid": uid, "question": "Which papers use a case study?", "golden_triples": []})
    deep = '{"uid": "q2", "question": "x", "golden_triples": ' + "[" * 5000 + "]" * 5000 + "}"
    (p / "deep.jsonl").write_text(ok + "\n" + deep + "\n")
    return "deep.jsonl"


def _huge_row_jsonl(p: Path) -> str:
    import json

    row = {"uid": "q1", "question": "Which papers? " + "x" * 2_000_000, "golden_triples": []}
    (p / "big.jsonl").write_text(json.dumps(row) + "\n")
    return "big.jsonl"


#: a golden triple of the GV3 export (docs/datasets.md's example)
GOLDEN = "(R869393:authors list, has list element, L1522147:Georg Buchgeher)"


def _golden_in(p: Path) -> str:
    """A golden triple of the project's own set whose ids are in the project's (10-paper) gv3_orkg graph."""
    import json

    from hublab.graph.model import parse_triple_string
    from hublab.graph.rdf import RdfKnowledgeGraph

    kg = RdfKnowledgeGraph.load(p / "data/snapshots/gv3_orkg.ttl")
    for line in (p / "data/kgqa/gv3_orkg.jsonl").read_text().splitlines():
        for g in json.loads(line)["golden_triples"]:
            t = parse_triple_string(g)
            if kg.entity(t.subject_id) is not None and kg.entity(t.object_id) is not None:
                return g
    raise AssertionError("no golden triple of the project's set is in its graph")


def _jsonl_run(p: Path, **fields) -> list[str]:
    """``hublab run`` on a one-row JSONL file: a valid row with ``fields`` changed."""
    import json

    row = {"uid": "q1", "question": "Who wrote it?", "golden_triples": [_golden_in(p)], **fields}
    (p / "rows.jsonl").write_text(json.dumps(row) + "\n")
    return ["run", BM25, "--graph", "gv3_orkg", "--dataset", "rows.jsonl", "--limit", "1"]


def _tune(*extra: str, study: str = "s29") -> list[str]:
    return ["tune", BM25, "--study", study, "--mode", "tpe", "--n-trials", "1", "--limit", "1", "--dataset",
            "gv3_orkg", "--graph", "gv3_orkg", "--no-carbon", "--no-progress", *extra]


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


BM25 = "pipelines/bm25.yaml"
OK_HEAD = "retriever: {type: bm25}\n"

# (case id, setup(project) -> (argv, env), substrings the output must contain)
Case = tuple[str, Callable[[Path], tuple[list[str], dict[str, str] | None]], list[str]]
CASES: list[Case] = [
    # pipeline YAML: strict types, finite numbers in range, known names, duplicate keys, unknown keys
    ("yaml: enabled is the string 'false'",
     lambda p: (_run(_yaml(p, OK_HEAD + 'generation: {enabled: "false"}\n')), None),
     ["bad.yaml", "line 2", "generation.enabled", "not a boolean"]),
    ("yaml: n_results: true", lambda p: (_run(_yaml(p, "retriever: {type: bm25, params: {n_results: true}}\n")),
                                         None), ["bad.yaml", "line 1", "retriever.params.n_results"]),
    ("yaml: n_results: '30'", lambda p: (_run(_yaml(p, 'retriever: {type: bm25, params: {n_results: "30"}}\n')),
                                         None), ["retriever.params.n_results", "'30'"]),
    ("yaml: max_failure_share .nan", lambda p: (_run(_yaml(p, OK_HEAD + "evaluation: {max_failure_share: .nan}\n")),
                                                None), ["line 2", "evaluation.max_failure_share", "finite"]),
    ("yaml: max_failure_share 5", lambda p: (_run(_yaml(p, OK_HEAD + "evaluation: {max_failure_share: 5}\n")), None),
     ["evaluation.max_failure_share", "[0, 1]"]),
    ("yaml: run_timeout_s .nan", lambda p: (_run(_yaml(p, OK_HEAD + "evaluation: {run_timeout_s: .nan}\n")), None),
     ["evaluation.run_timeout_s", "finite"]),
    ("yaml: embedder.batch_size -3", lambda p: (_run(_yaml(p, OK_HEAD + "embedder: {batch_size: -3}\n")), None),
     ["embedder.batch_size", "got -3"]),
    ("yaml: metric typo rogue", lambda p: (_run(_yaml(p, OK_HEAD + "evaluation: {generation_metrics: [rogue]}\n")),
                                           None), ["evaluation.generation_metrics", "rogue", "known:"]),
    ("yaml: duplicate key", lambda p: (_run(_yaml(p, OK_HEAD + "name: a\nname: b\n")), None),
     ["bad.yaml", "line 3", "'name'", "given twice"]),
    ("yaml: unknown llm key", lambda p: (_run(_yaml(p, OK_HEAD + "llm: {backend: none, tempreature: 0}\n")), None),
     ["llm.tempreature", "unknown key"]),
    ("yaml: unknown embedder key", lambda p: (_run(_yaml(p, OK_HEAD + "embedder: {colour: red}\n")), None),
     ["embedder.colour", "unknown key"]),
    ("yaml: pipeline name is a path", lambda p: (_run(_yaml(p, OK_HEAD + "name: ../../x\n")), None),
     ["line 2", "field 'name'"]),
    # credentials as values: refused, never echoed
    ("yaml: user:pass@ in base_url",
     lambda p: (_run(_yaml(p, OK_HEAD + f"llm: {{backend: openai, base_url: '{CRED_URL}'}}\n")), None),
     ["llm.base_url", "credentials"]),
    ("yaml: a key pasted into api_key_env",
     lambda p: (_run(_yaml(p, OK_HEAD + f"llm: {{backend: openai, api_key_env: {SECRET}}}\n")), None),
     ["llm.api_key_env", "environment variable"]),
    ("yaml: a bearer token in any field", lambda p: (_run(_yaml(p, OK_HEAD + f"description: '{BEARER}'\n")), None),
     ["field 'description'", "API key or token"]),
    ("cli: --llm-base-url with user:pass@", lambda p: (_run(BM25, "--llm-base-url", CRED_URL), None),
     ["--llm-base-url", "credentials"]),
    ("env: HUBLAB_LLM_BASE_URL with user:pass@", lambda p: (_run(BM25), {"HUBLAB_LLM_BASE_URL": CRED_URL}),
     ["HUBLAB_LLM_BASE_URL", "credentials"]),
    # CLI options: repeated / contradictory flags, names that are paths, unwritable outputs
    ("cli: --limit 2 --limit 3", lambda p: (_run(BM25, "--limit", "2", "--limit", "3"), None),
     ["--limit", "2 times"]),
    ("cli: --resume --no-resume", lambda p: (_run(BM25, "--resume", "--no-resume"), None), ["--resume", "--no-resume"]),
    ("cli: experiment name escapes", lambda p: (_run(BM25, "--experiment", "x/../../../../../tmp/esc"), None),
     ["--experiment", "must not contain"]),
    ("cli: --output /dev/full", lambda p: (_run(BM25, "--output", "/dev/full"), None),
     ["/dev/full", "--output", "not a regular file"]),
    ("cli: --output under /proc", lambda p: (_run(BM25, "--output", "/proc/x/metrics.json"), None),
     ["/proc/x/metrics.json", "--output"]),
    ("cli: --output is a directory", lambda p: (_run(BM25, "--output", str(p / "pipelines")), None),
     ["--output", "is a directory"]),
    ("cli: --report-dir under /proc", lambda p: (_run(BM25, "--report-dir", "/proc/x"), None),
     ["/proc/x", "--report-dir"]),
    ("cli: index --stats under /proc", lambda p: (["index", "--pipeline", BM25, "--graph", "gv3_orkg", "--stats",
                                                   "/proc/x/stats.json"], None), ["--stats"]),
    ("cli: tune --study is a path", lambda p: (["tune", BM25, "--study", "../evil", "--dataset", "gv3_orkg",
                                                "--graph", "gv3_orkg"], None), ["--study", "must not contain"]),
    # dataset file
    ("dataset: a directory", lambda p: (["run", BM25, "--graph", "gv3_orkg", "--dataset", str(p / "data/kgqa")], None),
     ["data/kgqa", "--dataset", "directory"]),
    ("dataset: non-UTF-8 byte in data row 2", lambda p: (["run", BM25, "--graph", "gv3_orkg", "--dataset",
                                                          _bad_byte_csv(p)], None),
     ["rows.csv", "row 2", "not UTF-8", "0xff"]),
    # class 4: the JSONL loader applies the CSV loader's row model (types, required values, triple strings)
    ("jsonl: a golden triple that does not parse", lambda p: (_jsonl_run(p, golden_triples=["(R1 no object)"]), None),
     ["rows.jsonl", "row 1", "'golden_triples'", "golden triple 0"]),
    ("jsonl: no golden triple", lambda p: (_jsonl_run(p, golden_triples=[]), None),
     ["rows.jsonl", "row 1", "'golden_triples'", "at least one golden triple"]),
    ("jsonl: a null question", lambda p: (_jsonl_run(p, question=None), None),
     ["rows.jsonl", "row 1", "'question'", "must not be null"]),
    ("jsonl: hops as a string", lambda p: (_jsonl_run(p, hops="2"), None),
     ["rows.jsonl", "row 1", "'hops'", "expected an integer, got str"]),
    ("jsonl: semi_typed as a number", lambda p: (_jsonl_run(p, semi_typed=1), None),
     ["rows.jsonl", "row 1", "'semi_typed'", "expected true or false"]),
    ("jsonl: an unknown key", lambda p: (_jsonl_run(p, questoin="Who?"), None),
     ["rows.jsonl", "row 1", "unknown key(s) ['questoin']"]),
    ("jsonl: golden triples as one string", lambda p: (_jsonl_run(p, golden_triples=GOLDEN), None),
     ["rows.jsonl", "row 1", "'golden_triples'", "expected a list of strings"]),
    ("golden ids: a row naming ids not in the graph, --strict",
     lambda p: (_jsonl_run(p, golden_triples=[_golden_in(p), "(R999999:gone, has, L999998:gone too)"]) + ["--strict"],
                None),
     ["rows.jsonl", "row 1", "'golden_triples'", "R999999, L999998", "not in graph 'gv3_orkg'", "--strict"]),
    # environment: the tracking store
    ("env: tracking server at a closed port", lambda p: (_run(BM25),
                                                         {"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{_closed_port()}"}),
     ["MLFLOW_TRACKING_URI", "unreachable"]),
    ("env: tracking store cannot be written", lambda p: (_run(BM25), {"MLFLOW_TRACKING_URI":
                                                                      "sqlite:////proc/hublab/mlflow.db"}),
     ["MLFLOW_TRACKING_URI", "cannot be created"]),
    # issue #29, class 1: names are checked as the strings they become (decoded), in a safe set and length
    ("names: experiment percent-encoded ../", lambda p: (_run(BM25, "--limit", "1", "--experiment",
                                                              "x%2e%2e%2f%2e%2e%2fesc"), None),
     ["--experiment", "percent-encoded", "must not contain"]),
    ("names: experiment double-encoded ../", lambda p: (_run(BM25, "--limit", "1", "--experiment",
                                                             "x%252e%252e%252fesc"), None),
     ["--experiment", "decodes to a path"]),
    ("names: experiment with '#'", lambda p: (_run(BM25, "--limit", "1", "--experiment", "exp#1"), None),
     ["--experiment", "'#'", "letters, digits"]),
    ("names: experiment with '?'", lambda p: (_run(BM25, "--limit", "1", "--experiment", "exp?x=1"), None),
     ["--experiment", "'?'"]),
    ("names: experiment starting with '.'", lambda p: (_run(BM25, "--limit", "1", "--experiment", ".hidden"), None),
     ["--experiment", "not starting with '.'"]),
    ("names: experiment of 300 characters", lambda p: (_run(BM25, "--limit", "1", "--experiment", "e" * 300), None),
     ["--experiment", "300 characters", "at most 100"]),
    ("names: tune --study percent-encoded", lambda p: (_tune(study="%2e%2e%2fevil"), None),
     ["--study", "decodes to a path"]),
    # class 2: bounded parsing (regular files only, size, nesting, alias expansion)
    ("bounded: YAML alias bomb", lambda p: (_run(_yaml(p, _alias_bomb()), "--limit", "1"), None),
     ["bad.yaml", "aliases", "alias bomb"]),
    ("bounded: YAML nested 3000 deep", lambda p: (_run(_yaml(p, OK_HEAD + "tuned: {a: " + "[" * 3000 + "]" * 3000
                                                             + "}\n"), "--limit", "1"), None),
     ["bad.yaml", "line 2", "nested more than"]),
    ("bounded: 6 MB pipeline YAML", lambda p: (_run(_yaml(p, OK_HEAD + "description: '" + "x" * 6_000_000 + "'\n"),
                                                    "--limit", "1"), None),
     ["bad.yaml", "at most 5 MB"]),
    ("bounded: pipeline is a FIFO", lambda p: (_run(_fifo(p, "pipe.yaml"), "--limit", "1"), None),
     ["pipe.yaml", "device, pipe or socket"]),
    ("bounded: tune pipeline is a FIFO", lambda p: (["tune", _fifo(p, "pipe.yaml"), "--study", "s29", "--dataset",
                                                     "gv3_orkg", "--graph", "gv3_orkg"], None),
     ["pipe.yaml", "device, pipe or socket"]),
    ("bounded: dataset is a FIFO", lambda p: (["run", BM25, "--graph", "gv3_orkg", "--dataset",
                                               _fifo(p, "fifo.jsonl")], None),
     ["fifo.jsonl", "--dataset", "device, pipe or socket"]),
    ("bounded: JSONL nested 5000 deep", lambda p: (["run", BM25, "--graph", "gv3_orkg", "--dataset", _deep_jsonl(p),
                                                    "--limit", "1"], None),
     ["deep.jsonl", "row 2", "nested"]),
    ("bounded: JSONL row of 2 MB", lambda p: (["run", BM25, "--graph", "gv3_orkg", "--dataset", _huge_row_jsonl(p),
                                               "--limit", "1"], None),
     ["big.jsonl", "row 1", "at most 1 MB"]),
    # class 3: a key in any part of a URL is refused, never echoed
    ("url: api_key in the base_url's query",
     lambda p: (_run(_yaml(p, OK_HEAD + f"llm: {{backend: openai, base_url: 'http://127.0.0.1:9/v1?api_key={QUERY_KEY}'"
                              "}\n"), "--limit", "1"), None),
     ["bad.yaml", "llm.base_url", "query string or fragment", "'api_key'"]),
    ("url: --llm-base-url with #access_token=", lambda p: (_run(BM25, "--limit", "1", "--llm-base-url",
                                                                f"http://127.0.0.1:9/v1#access_token={QUERY_KEY}"),
                                                           None),
     ["--llm-base-url", "query string or fragment"]),
    ("url: HUBLAB_LLM_BASE_URL with ?key=", lambda p: (_run(BM25, "--limit", "1"), {
        "HUBLAB_LLM_BASE_URL": f"http://127.0.0.1:9/v1?model=x&key={QUERY_KEY}"}),
     ["HUBLAB_LLM_BASE_URL", "query string or fragment"]),
    # class 5: values that make no sense
    ("values: evaluation.k 1e12", lambda p: (_run(_yaml(p, OK_HEAD + "evaluation: {k: 1000000000000}\n"),
                                                  "--limit", "1"), None),
     ["bad.yaml", "line 2", "evaluation.k", "1 to 1000"]),
    ("values: device cuda:7", lambda p: (_run(_yaml(p, OK_HEAD + "embedder: {device: 'cuda:7'}\n"), "--limit", "1"),
                                         None),
     ["bad.yaml", "line 2", "embedder.device", "'cuda:7' is not on this machine"]),
    ("values: run with a search-space factor the method lacks",
     lambda p: (_run(_yaml(p, OK_HEAD + "search_space: {retriever.params.numbr_of_hubs: [1, 2]}\n"), "--limit", "1"),
                None),
     ["bad.yaml", "search_space.retriever.params.numbr_of_hubs", "unknown parameter"]),
    ("values: run with a shape-space factor the method lacks",
     lambda p: (_run(_yaml(p, OK_HEAD + "shape_space: {retriever.params.output_value_bost: [0, 1]}\n"), "--limit",
                     "1"), None),
     ["bad.yaml", "shape_space.retriever.params.output_value_bost", "unknown parameter"]),
    ("values: tune with device cuda:7", lambda p: (["tune", _yaml(p, (p / BM25).read_text()
                                                                 + "embedder: {device: 'cuda:7'}\n"), "--study", "s29",
                                                     "--mode", "tpe", "--n-trials", "1", "--limit", "1", "--dataset",
                                                     "gv3_orkg", "--graph", "gv3_orkg", "--no-carbon",
                                                     "--no-progress"], None),
     ["bad.yaml", "embedder.device", "'cuda:7' is not on this machine"]),
    ("values: tune objective typo", lambda p: (_tune("--objectives", "recal_triples"), None),
     ["--objectives", "recal_triples", "did you mean 'recall_triples'"]),
    # class 6: stores and outputs
    ("stores: tune storage postgresql without its driver",
     lambda p: (_tune("--storage", f"postgresql://hub:{URL_PASS}@127.0.0.1:9/db"), None),
     ["--storage", "not installed", "psycopg"]),
    ("outputs: --dry-run --report-dir", lambda p: (_run(BM25, "--dry-run", "--report-dir", "reports/x"), None),
     ["--report-dir", "--dry-run"]),
    # class 7 (issue #45): values a library would trip over deep inside a run (each a traceback before)
    ("dataset: a lone surrogate in a question", lambda p: (_dataset_run(_surrogate_jsonl(p)), None),
     ["surrogate.jsonl", "row 2", "field 'question'", "lone surrogate"]),
    ("dataset: a newline in the file name", lambda p: (_dataset_run(_rows_file(p, "a\nb.jsonl")), None),
     ["a\\nb.jsonl", "--dataset", "control or format characters"]),
    ("yaml: embedder.model is a file", lambda p: (_run(_embedder_at(p, p / "params.yaml"), "--limit", "1"), None),
     ["field 'embedder.model'", "is a file"]),
    ("yaml: embedder.model is a folder of junk", lambda p: (_run(_embedder_at(p, _junk(p)), "--limit", "1"), None),
     ["field 'embedder.model'", "not a sentence-transformers model folder"]),
    ("env: an API key with non-ASCII letters", lambda p: (_run(_llm_keyed(p), "--limit", "1"),
                                                          {"HOSTILE_KEY": "ключ-abcdef-123"}),
     ["generation.llm.api_key_env", "HOSTILE_KEY", "non-ASCII", "value not shown"]),
]


def _embedder_at(p: Path, model: Path) -> str:
    return _yaml(p, OK_HEAD + f"embedder: {{model: '{model}'}}\n")


def _llm_keyed(p: Path) -> str:
    return _yaml(p, OK_HEAD + "generation: {enabled: true, llm: {backend: openai, base_url: 'http://127.0.0.1:9/v1', "
                 "api_key_env: HOSTILE_KEY}}\n")


def _dataset_run(path: str) -> list[str]:
    return ["run", BM25, "--graph", "gv3_orkg", "--dataset", path, "--no-carbon"]


def _rows_file(p: Path, name: str, n: int = 3) -> str:
    """The first ``n`` rows of the built-in GV3 set, outside the project (nothing may be written inside it)."""
    f = p.parent / "inputs" / name
    f.parent.mkdir(exist_ok=True)
    f.write_text("\n".join((p / "data/kgqa/gv3_orkg.jsonl").read_text().splitlines()[:n]) + "\n")
    return str(f)


def _surrogate_jsonl(p: Path) -> str:
    """Row 2's question starts with a JSON escape of a lone surrogate (valid JSON, not valid text)."""
    f = Path(_rows_file(p, "surrogate.jsonl"))
    lines = f.read_text().splitlines()
    lines[1] = lines[1].replace('"question": "', '"question": "\\ud800 ', 1)
    f.write_text("\n".join(lines) + "\n")
    return str(f)


def _junk(p: Path) -> Path:
    d = p.parent / "inputs" / "junkmodel"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text("{not json")
    (d / "pytorch_model.bin").write_bytes(os.urandom(64))
    return d


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_refused_before_any_work_located_and_leaving_nothing(case: Case, project: Path):
    _, setup, expected = case
    argv, env = setup(project)
    before = sorted(str(f.relative_to(project.parent)) for f in project.parent.rglob("*"))
    t0 = time.perf_counter()
    code, out = invoke(argv, env)
    took = time.perf_counter() - t0
    # nothing written inside the project or beside it (a name that escapes would land next to it)
    assert sorted(str(f.relative_to(project.parent)) for f in project.parent.rglob("*")) == before
    assert code == 2, out[-3000:]
    assert "Traceback" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert errors, out
    for piece in expected:
        assert piece in out, (piece, out[-3000:])
    for secret in FORBIDDEN:
        assert secret not in out
    assert not (project / "outputs").exists(), "a run folder was left behind"
    assert not (project / "mlruns").exists(), "an MLflow store was created"
    assert not (project / "models").exists(), "an index was opened"
    assert took < 20, f"refusal took {took:.1f} s (the tracking check must not retry for minutes)"


def test_every_problem_is_reported_at_once(project: Path):
    bad = _yaml(project, 'retriever: {type: bm25, params: {n_results: "30"}}\ngeneration: {enabled: "false"}\n'
                         "evaluation: {max_failure_share: .nan}\n")
    code, out = invoke(["run", bad, "--graph", "gv3_orkg", "--dataset", str(project / "data/kgqa"), "--experiment",
                        "a/b", "--output", "/dev/full"])
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert code == 2
    fields = ["retriever.params.n_results", "generation.enabled", "evaluation.max_failure_share", "--dataset",
              "--experiment", "--output"]
    for f in fields:
        assert any(f in e for e in errors), (f, errors)
    assert len(errors) == len(fields), errors
    assert not (project / "outputs").exists() and not (project / "mlruns").exists()


# ---------------- dataset files ----------------
def test_rows_naming_golden_ids_the_graph_lacks_are_a_warning_with_their_rows(project: Path):
    """Not a silent 0: the run goes on (most ids are in the graph), and the warning counts and names the rows."""
    import json

    from hublab.config import settings
    from hublab.preflight import check_run

    gone = "(R999999:gone, has, L999998:gone too)"
    rows = [{"uid": f"q{i}", "question": "Who wrote it?", "golden_triples": [_golden_in(project)]
             + ([gone] if i == 2 else [])}
            for i in (1, 2, 3)]
    (project / "mine.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    checked = check_run(Path(BM25), "gv3_orkg", "mine.jsonl", settings=settings(), tracking=False)
    (warning,) = [w for w in checked.warnings if "golden triple ids" in w]
    assert "1 of 3 questions" in warning and "row 2: R999999, L999998" in warning and "--strict" in warning


def test_bom_and_upper_case_suffix_are_read_as_csv(project: Path, shared: Path):
    from hublab.config import settings
    from hublab.datasets.catalog import load_dataset

    text = "".join(_csv_rows(shared))
    (project / "bom.csv").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (project / "upper.CSV").write_text(text, encoding="utf-8")
    st = settings()
    plain = load_dataset(st, str(shared / "data/kgqa/flat_distributed.csv"))[:3]
    for name in ("bom.csv", "upper.CSV"):
        got = load_dataset(st, name)
        assert [p.uid for p in got] == [p.uid for p in plain], name
        assert [p.question for p in got] == [p.question for p in plain]


def test_duplicate_uids_are_reported_with_their_rows(project: Path, shared: Path):
    from hublab.config import settings
    from hublab.preflight import check_run

    rows = _csv_rows(shared, 2)
    (project / "dup.csv").write_text("".join(rows) + rows[1], encoding="utf-8")
    uid = rows[1].split(",", 1)[0]
    checked = check_run(Path("pipelines/bm25.yaml"), "gv3_orkg", "dup.csv", settings=settings(), tracking=False)
    assert any(f"uid {uid!r} appears in rows [1, 3]" in w for w in checked.warnings), checked.warnings


def test_a_missing_api_key_variable_is_reported(project: Path, monkeypatch):
    from hublab.config import settings
    from hublab.preflight import check_run

    monkeypatch.delenv("HUBLAB_TEST_UNSET_KEY", raising=False)
    bad = _yaml(project, OK_HEAD + "llm: {backend: openai, api_key_env: HUBLAB_TEST_UNSET_KEY}\n")
    checked = check_run(Path(bad), "gv3_orkg", None, settings=settings(), tracking=False)
    assert any("HUBLAB_TEST_UNSET_KEY" in w and "not set" in w and "llm.api_key_env" in w for w in checked.warnings)


# ---------------- faults at the edges ----------------
def test_a_locked_lite_index_names_the_process_holding_it(tmp_path: Path):
    from hublab.errors import HubLabError
    from hublab.vectorstore.milvus import MilvusVectorStore

    db = tmp_path / "index.db"
    db.mkdir()
    fd = os.open(db / "LOCK", os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what a Milvus Lite process holds while it has the file
        with pytest.raises(HubLabError) as err:
            MilvusVectorStore(str(db))
    finally:
        os.close(fd)
    msg = str(err.value)
    assert f"pid {os.getpid()}" in msg and "in use" in msg and "\n" not in msg


@pytest.fixture()
def two_paper_hublink(gv3_orkg_graph, tmp_path: Path):
    """HubLink over a 2-paper GV3 subgraph, indexed (small, so the resume below is quick)."""
    from hublab.embedding.factory import build_embedder
    from hublab.graph.rdf import RdfKnowledgeGraph
    from hublab.llm.factory import build_llm
    from hublab.retrievers.base import Resources
    from hublab.retrievers.registry import get_retriever_class
    from hublab.vectorstore.factory import build_vector_store

    triples = K.paper_triples(gv3_orkg_graph, 2)
    g = RdfKnowledgeGraph.from_triples(list(triples.values()), name="gv3_two")
    res = Resources(graph=g, root_entity_ids=["R659055"],
                    embedder=build_embedder({"model": "all-MiniLM-L6-v2", "device": "cpu"}, tmp_path),
                    llm=build_llm({"backend": "none"}), vector_store=build_vector_store(None, tmp_path / "x.db"),
                    index_name="gv3_two", cache_dir=str(tmp_path))
    r = get_retriever_class("hublink")(res)
    r.index(progress=False)
    return r


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_an_interrupted_index_build_is_resumed_or_refused_never_searched(two_paper_hublink):
    """The manifest an interrupted build leaves (``hubs: {}``, every hub unsettled): not built; with
    ``auto_index`` the build resumes before the first question, without it the run stops with the reason, and a
    question on it is an error, not an empty answer."""
    import json

    from hublab.errors import HubLabError

    r = two_paper_hublink
    idx = r.hub_index
    good = idx.manifest_path.read_text()
    state = json.loads(good)
    assert state["complete"] is True and idx.is_built()
    interrupted = {"collection": state["collection"], "hubs": {}, "unsettled": sorted(state["hubs"]),
                   "complete": False}
    auto = r.config
    try:
        idx.manifest_path.write_text(json.dumps(interrupted))
        assert not idx.is_built()
        assert "incomplete" in idx.build_state() and f"{len(state['hubs'])} unsettled" in idx.build_state()
        r.config = dataclasses.replace(auto, auto_index=False)
        with pytest.raises(HubLabError, match="incomplete.*hublab index"):
            r.ensure_ready()
        with pytest.raises(HubLabError):
            r.retrieve("Which papers use a case study?")  # Pipeline.run records this as the question's error
        # killed between two batches: nothing unsettled, but the build never finished
        idx.manifest_path.write_text(json.dumps({**state, "hubs": dict(list(state["hubs"].items())[:3]),
                                                 "complete": False}))
        assert not idx.is_built()
        r.config = dataclasses.replace(auto, auto_index=True)
        idx.manifest_path.write_text(json.dumps(interrupted))
        r.ensure_ready()  # resumes: the unsettled hubs are indexed again
        assert idx.is_built()
        assert json.loads(idx.manifest_path.read_text())["hubs"] == state["hubs"]
        assert r.retrieve("Which papers use a case study?").contexts
    finally:
        r.config = auto
        idx.manifest_path.write_text(good)


FDOPEN = os.fdopen


def _full_disk_for(monkeypatch, name: str) -> None:
    """The disk fills while ``name`` is being written: a write to an open file whose path holds ``name`` (HubLab's
    atomic writes open a temporary ``.<name>.*.tmp`` beside the target) fails with ENOSPC after half its text."""
    real = FDOPEN

    class Full:
        def __init__(self, f):
            self._f = f

        def write(self, text):
            self._f.write(text[: len(text) // 2])
            self._f.flush()
            raise OSError(28, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._f.close()

        def __getattr__(self, attr):
            return getattr(self._f, attr)

    def fdopen(fd, *a, **kw):
        f = real(fd, *a, **kw)
        return Full(f) if name in os.readlink(f"/proc/self/fd/{fd}") else f

    monkeypatch.setattr(os, "fdopen", fdopen)


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_a_late_write_error_keeps_the_results_and_says_where(project: Path, monkeypatch):
    """--output passes the check, then the disk refuses the write after the run: one error line naming the MLflow
    run and the kept results; rerunning the same command writes it without recomputing."""
    _full_disk_for(monkeypatch, "late.json")
    code, out = invoke(_run(BM25, "--limit", "2", "--no-trace", "--output", "late.json"))
    assert code == 2 and "Traceback" not in out, out
    err = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(err) == 1 and "late.json" in err[0] and "MLflow run" in err[0] and "No space left" in err[0], out
    assert [f.name for f in project.iterdir() if "late.json" in f.name] == [], "a partial or temporary file is left"
    monkeypatch.setattr(os, "fdopen", FDOPEN)
    code, out = invoke(_run(BM25, "--limit", "2", "--no-trace", "--output", "late.json", "--json"))
    assert code == 0, out
    assert (project / "late.json").exists()


@pytest.mark.slow  # two CLI runs with their MLflow store: full tier
def test_a_full_disk_under_report_dir_keeps_the_last_report_and_names_the_file(project: Path, monkeypatch):
    """--report-dir's files are replaced atomically: the disk filling while a slice CSV is written leaves the
    previous report's file whole (not a 0-byte or half file), no temporary file, and the error names that CSV."""
    argv = _run(BM25, "--limit", "2", "--no-trace", "--report-dir", "reports/x")
    code, out = invoke(argv)
    assert code == 0, out
    (report,) = (project / "reports").glob("x.partial-2of*")  # --limit: a partial run's report folder
    before = {f.name: f.read_bytes() for f in report.iterdir()}
    assert "by_hops.csv" in before and all(before.values())
    (report / "by_hops.csv").write_bytes(b"value,hits\nprevious,1\n")  # a previous report, to be kept whole
    _full_disk_for(monkeypatch, "by_hops.csv")
    code, out = invoke(argv)
    assert code == 2 and "Traceback" not in out, out
    err = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(err) == 1 and f"{report.name}/by_hops.csv" in err[0] and "No space left" in err[0], out
    assert (report / "by_hops.csv").read_bytes() == b"value,hits\nprevious,1\n"
    assert sorted(f.name for f in report.iterdir()) == sorted(before), "a temporary file is left"
    assert (report / "metrics.json").read_bytes() == before["metrics.json"]


# ---------------- no secret anywhere ----------------
@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_a_planted_secret_reaches_no_log_artifact_report_or_console(project: Path, monkeypatch):
    """Secrets planted where a careless user puts them — a key-named env var, a variable named by a ``*_env`` key,
    a key and a credential URL pasted into dataset questions and answers — are masked in the console, the MLflow
    store (params, tags, the sqlite db, traces), every artifact, the checkpoint, the report folder and --output;
    the refused places (config values, --llm-base-url) are covered by the refusal cases above."""
    import json

    env_key, store_token = "PLANTEDenvkey0abcdef0123", "PLANTEDstoretoken0abc0123"
    monkeypatch.setenv("HUBLAB_PLANTED_API_KEY", env_key)
    monkeypatch.setenv("HUBLAB_PLANTED_STORE", store_token)
    ds = project / "data/kgqa/gv3_orkg.jsonl"
    rows = [json.loads(line) for line in ds.read_text().splitlines()]
    rows[0]["question"] += f" (my key is {SECRET})"
    rows[1]["question"] += f" see {CRED_URL}"
    rows[2]["golden_answer"] += f" {env_key} {BEARER}"
    ds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pipe = _yaml(project, (project / "pipelines/bm25.yaml").read_text()
                 + "vector_store: {token_env: HUBLAB_PLANTED_STORE}\n")
    code, out = invoke(["run", pipe, "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--limit", "4", "--no-carbon",
                        "--output", "out/metrics.json", "--report-dir", "reports/eval/x"])
    assert code == 0, out[-3000:]
    planted = (*FORBIDDEN, env_key, store_token)
    for s in planted:
        assert s not in out
    assert_found_nowhere(project, planted)
    preds = next((project / "mlruns").rglob("predictions.csv")).read_text()
    assert "my key is ***" in preds and "http://***@127.0.0.1:9/v1" in preds


def test_formula_cells_reach_predictions_csv_as_text(project: Path):
    """A dataset cell a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@`` first) is written to
    predictions.csv with a leading apostrophe (shown as text), and nothing else changes."""
    import csv
    import json

    ds = project / "data/kgqa/gv3_orkg.jsonl"
    rows = [json.loads(line) for line in ds.read_text().splitlines()]
    planted = ['=HYPERLINK("http://127.0.0.1:9/x","open")', "@SUM(1+1)", "+cmd|' /C calc'!A0", "-2+3"]
    rows[0]["question"] = planted[0] + " " + rows[0]["question"]
    rows[1]["golden_answer"] = planted[1]
    rows[2]["golden_answer"] = planted[2]
    rows[3]["question"] = planted[3] + " " + rows[3]["question"]
    ds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out = invoke(_run("pipelines/bm25.yaml", "--limit", "4"))
    assert code == 0, out[-3000:]
    with next((project / "mlruns").rglob("predictions.csv")).open(newline="", encoding="utf-8") as fh:
        got = list(csv.DictReader(fh))
    assert got[0]["question"] == "'" + planted[0] + " " + rows[0]["question"][len(planted[0]) + 1:]
    assert (got[1]["golden_answer"], got[2]["golden_answer"]) == ("'" + planted[1], "'" + planted[2])
    assert got[3]["question"].startswith("'-2+3 ")
    assert not [c for r in got for c in r.values() if c[:1] in ("=", "+", "@")]
    assert float(got[0]["runtime"]) > 0  # numbers stay numbers


# ---------------- issue #29: outputs, damaged stores, keys in URLs, interrupts ----------------
def test_dry_run_writes_its_estimate_to_output_and_dev_null_is_accepted(project: Path):
    """``--dry-run --output f`` writes the estimate it prints as JSON (it was silently ignored); ``--output
    /dev/null``, the usual way to discard an output, is accepted (a real device such as /dev/full is refused
    above). Nothing else is written: no run folder, no MLflow store, no temporary file beside the output."""
    import json

    code, out = invoke(_run(BM25, "--dry-run", "--output", "est/estimate.json"))
    assert code == 0, out[-3000:]
    doc = json.loads((project / "est/estimate.json").read_text())
    assert doc["dry_run"] is True and doc["n_questions"] == 10 and doc["line"] in out
    assert sorted(f.name for f in (project / "est").iterdir()) == ["estimate.json"]
    code, out = invoke(_run(BM25, "--dry-run", "--output", "/dev/null"))
    assert code == 0 and "error" not in out, out[-3000:]
    assert not (project / "outputs").exists() and not (project / "mlruns").exists()


def _random_bytes_file(db: Path) -> Path:
    db.parent.mkdir(parents=True)
    db.write_bytes(os.urandom(4096))
    return db


def _empty_file(db: Path) -> Path:
    db.parent.mkdir(parents=True)
    db.write_bytes(b"")
    return db


def _lite_folder(db: Path) -> Path:
    """The layout Milvus Lite writes (a folder: LOCK, collections/<c>/{manifest,schema}.json, Parquet data)."""
    data = db / "collections" / "c" / "partitions" / "_default" / "data"
    data.mkdir(parents=True)
    (db / "LOCK").write_bytes(b"")
    (db / "collections" / "c" / "schema.json").write_text('{"fields": []}')
    (db / "collections" / "c" / "manifest.json").write_text('{"version": 1}')
    (data / "data_000001_000001.parquet").write_bytes(b"PAR1" + os.urandom(64) + b"PAR1")
    return db


def _truncated_parquet(db: Path) -> Path:
    _lite_folder(db)
    part = next(db.rglob("*.parquet"))
    part.write_bytes(part.read_bytes()[:30])  # a copy or a disk that stopped mid-file: no footer
    return part


def _broken_manifest(db: Path) -> Path:
    _lite_folder(db)
    manifest = db / "collections" / "c" / "manifest.json"
    manifest.write_text('{"vers')
    return manifest


@pytest.mark.parametrize("damage", [_random_bytes_file, _empty_file, _truncated_parquet, _broken_manifest],
                         ids=["random bytes", "empty file", "truncated parquet", "broken manifest"])
def test_a_damaged_lite_index_is_named_with_how_to_rebuild_it(project: Path, damage):
    """A Milvus Lite index that is random bytes, empty, or a folder with a truncated data file or a broken manifest:
    one line naming the damaged file and how to rebuild it, before the Lite engine opens it (library tracebacks and
    a misleading "another process?" before); the damaged files are left as they were, nothing else is created."""
    folder = project / "models" / "gv3_orkg__bm25"
    bad = damage(folder / "index.db")
    before = {f: f.read_bytes() for f in folder.rglob("*") if f.is_file()}
    code, out = invoke(_run(BM25, "--limit", "1"))
    assert code == 2, out[-3000:]
    assert "Traceback" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, out
    assert f"{bad.relative_to(project)}, " in errors[0] and "damaged" in errors[0], errors
    assert f"delete {project.resolve() / 'models/gv3_orkg__bm25'} and run hublab index --pipeline " \
           "pipelines/bm25.yaml --graph gv3_orkg" in errors[0], errors
    assert {f: f.read_bytes() for f in folder.rglob("*") if f.is_file()} == before
    assert not (project / "outputs").exists() and not (project / "mlruns").exists()


@pytest.mark.parametrize("damage", [_random_bytes_file, _truncated_parquet, _broken_manifest],
                         ids=["random bytes", "truncated parquet", "broken manifest"])
def test_the_store_itself_names_a_damaged_lite_index(tmp_path: Path, damage):
    """Every command that opens a Lite file (``report compare``, ``tune``, a script), not only those the CLI
    pre-checks: the store's own one line names the damaged file and how to rebuild it, not "another process?"."""
    from hublab.errors import HubLabError
    from hublab.vectorstore.milvus import MilvusVectorStore

    db = tmp_path / "models" / "g__m" / "index.db"
    bad = damage(db)
    with pytest.raises(HubLabError) as err:
        MilvusVectorStore(str(db))
    msg = str(err.value)
    assert f"file {bad}: " in msg and "is damaged; rebuild it: delete" in msg and "hublab index" in msg, msg
    assert "another" not in msg


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_a_key_in_a_url_query_or_fragment_reaches_no_log_artifact_or_console(project: Path):
    """Keys in a URL's query string or fragment (``?api_key=``, ``&token=``, ``#access_token=``, a signed URL's
    ``X-Amz-Signature``) pasted into the questions and answers of a dataset (which cannot be refused: it is data)
    are masked in the console, the MLflow store, every artifact, the checkpoint, the report folder and --output;
    the rest of each URL is kept."""
    import json

    keys = {"api_key": "PLANTEDq1apikey0abc123", "token": "PLANTEDq2token0abc123",
            "access_token": "PLANTEDq3fragment0abc123", "X-Amz-Signature": "PLANTEDq4signature0abc123"}
    ds = project / "data/kgqa/gv3_orkg.jsonl"
    rows = [json.loads(line) for line in ds.read_text().splitlines()]
    rows[0]["question"] += f" (see http://127.0.0.1:9/v1?api_key={keys['api_key']}&model=x)"
    rows[1]["question"] += f" via https://example.org/data?format=csv&token={keys['token']}"
    rows[1]["golden_answer"] += f" https://example.org/cb#access_token={keys['access_token']}&state=1"
    rows[2]["question"] += f" https://bucket.s3.amazonaws.com/f.csv?X-Amz-Signature={keys['X-Amz-Signature']}"
    ds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out = invoke(["run", BM25, "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--limit", "3", "--no-carbon",
                        "--output", "out/metrics.json", "--report-dir", "reports/eval/x"])
    assert code == 0, out[-3000:]
    for key in keys.values():
        assert key not in out
    assert_found_nowhere(project, list(keys.values()))
    preds = next((project / "mlruns").rglob("predictions.csv")).read_text()
    assert "v1?api_key=***&model=x" in preds and "format=csv&token=***" in preds
    assert "X-Amz-Signature=***" in preds


@pytest.mark.slow  # a `hublab` subprocess interrupted with a signal, then resumed
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_ctrl_c_during_a_run_says_that_the_same_command_resumes(base: Path, tmp_path: Path, signame: str):
    """SIGINT (Ctrl-C), SIGTERM (kill, a service manager's stop) or SIGHUP (a closed terminal) while ``hublab run``
    works: exit 128 + the signal's number and one line naming it, saying the MLflow run is KILLED and that the same
    command resumes; rerunning the same command then finishes that run, each question once."""
    import json
    import signal
    import subprocess

    root = tmp_path / "proj"
    shutil.copytree(base, root, symlinks=True)
    args = K.cli_args(*_run(BM25, "--limit", "8", "--no-trace"))
    # each question waits 1 s first (tests/platform/inject): the signal lands inside the run however fast BM25 is
    qlog = tmp_path / "questions.log"
    slow = {**K.env(root), "HUBLAB_TEST_QUESTION_LOG": str(qlog), "HUBLAB_TEST_QUESTION_DELAY": "1",
            "PYTHONPATH": os.pathsep.join([str(INJECT), K.env(root)["PYTHONPATH"]])}
    # SIGINT as a terminal delivers it: a shell without job control (CI's) starts background jobs with SIGINT ignored,
    # and Python then keeps it ignored
    def default_handlers() -> None:  # as a terminal's shell starts a command (a `nohup` CI would ignore SIGHUP)
        for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
            signal.signal(s, signal.SIG_DFL)

    proc = subprocess.Popen(args, cwd=root, env=slow, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_handlers)
    deadline = time.monotonic() + 180
    # the second question started: the first is answered and the MLflow run, opened after it (issue #43), exists
    while not (qlog.exists() and len(qlog.read_text().splitlines()) >= 2) and proc.poll() is None:
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    sig = getattr(signal, signame)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    said = [line for line in err.splitlines() if line.startswith("interrupted")]
    assert len(said) == 1 and "rerun the same command to resume" in said[0] and "KILLED" in said[0], err[-3000:]
    assert f"({'Ctrl-C' if signame == 'SIGINT' else signame})" in said[0], said
    assert [s for _, s, _ in K.mlflow_runs(root)] == ["KILLED"], K.mlflow_runs(root)
    done = subprocess.run(args, cwd=root, env=K.env(root), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [s for _, s, _ in K.mlflow_runs(root)] == ["FINISHED"], K.mlflow_runs(root)
    (ckpt,) = (root / "outputs" / "runs").glob("*/predictions.jsonl")
    keys = [json.loads(line)["key"] for line in ckpt.read_text().splitlines() if line.strip()]
    assert len(keys) == len(set(keys)) == 8, keys  # each question once, none lost


@pytest.mark.parametrize("value", ["0", "-1"])
@pytest.mark.parametrize("command", [["tune", BM25, "--dataset", "reduced_gv1"], ["tune-all"]])
def test_a_study_with_no_questions_is_refused_before_any_trial(tmp_path: Path, monkeypatch, command, value):
    """``--limit 0`` / ``-1`` on a study: refused as a usage error before anything is created (it was refused only
    inside trial 0, leaving a FAIL trial and a FAILED parent run)."""
    from typer.testing import CliRunner

    from hublab.cli import app

    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, [*command, "--limit", value], env={"COLUMNS": "200"})
    assert res.exit_code == 2 and "--limit" in res.output and "greater than or equal to 1" in res.output, res.output
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("damage", ["", '{"run_id": "abc', "\x00\x01garbage", "[1, 2]"])
def test_a_damaged_checkpoint_state_is_one_located_line_and_says_what_to_do(project: Path, damage: str):
    """``outputs/runs/<id>/state.json`` truncated, emptied or not a state: one ``error:`` line naming the file and
    the way on (every rerun was a traceback until it was deleted by hand); deleting it, as said, goes on with the
    answers kept; ``--no-resume`` also works."""
    args = _run(BM25, "--limit", "2", "--no-trace")
    code, out = invoke(args)
    assert code == 0, out[-3000:]
    (state,) = (project / "outputs" / "runs").glob("*/state.json")
    state.write_text(damage)
    code, out = invoke(args)
    assert code == 2 and "Traceback" not in out, out[-3000:]
    (line,) = [x for x in out.splitlines() if x.startswith("error:")]
    assert str(state) in line and "checkpoint state" in line and "delete it" in line and "--no-resume" in line
    state.unlink()
    code, out = invoke(args)
    assert code == 0, out[-3000:]
    code, out = invoke([*args, "--no-resume"])
    assert code == 0, out[-3000:]


def test_outputs_keep_their_mode(tmp_path: Path):
    """Every atomic write (reports, --output, checkpoints) keeps the file's mode, and a new file gets the usual
    0666 & ~umask: the temporary file's private 0600 reached ``--output`` files and the committed reports."""
    from hublab.atomic import write_bytes_atomic, write_text_atomic

    old = os.umask(0o022)
    try:
        new = tmp_path / "new.md"
        write_text_atomic(new, "a")
        assert new.stat().st_mode & 0o777 == 0o644
        shared = tmp_path / "shared.csv"
        shared.write_text("x")
        shared.chmod(0o664)
        write_bytes_atomic(shared, b"y")
        assert shared.stat().st_mode & 0o777 == 0o664 and shared.read_bytes() == b"y"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["new.md", "shared.csv"]  # no temporary file left
    finally:
        os.umask(old)


@pytest.mark.parametrize("name", ["bm25\u202egnp.exe", "x" * 10_000, "a%2F..%2Fb"])
def test_a_pipeline_name_follows_the_rules_of_experiment_names(project: Path, name: str):
    """A pipeline's ``name`` becomes the MLflow run name (and, through ``--report-dir``, paths): an RTL override, a
    10,000-character name or an encoded path is refused as ``--experiment`` refuses it, before any work."""
    import yaml

    cfg = yaml.safe_load((project / "pipelines" / "bm25.yaml").read_text())
    cfg["name"] = name
    (project / "renamed.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    code, out = invoke(_run("renamed.yaml", "--limit", "1"))
    assert code == 2 and "Traceback" not in out, out[-2000:]
    assert "pipeline name" in out and "renamed.yaml" in out, out[-2000:]
    assert not (project / "mlruns").exists() or not list((project / "mlruns").rglob("meta.yaml"))


@pytest.mark.parametrize("command", [["tune", BM25, "--study", "s", "--dataset", "gv3_orkg", "--n-trials", "1"],
                                     ["tune-all", BM25, "--dataset", "gv3_orkg", "--n-trials", "1"]])
def test_a_study_whose_tracking_server_is_unreachable_is_refused_before_any_lock(project: Path, command):
    """``MLFLOW_TRACKING_URI`` naming a server nobody answers: a study is refused in seconds with one line, as ``hublab
    run`` is, before it takes the mlruns lock or creates a study (it printed nothing for ~10 minutes, holding the
    lock every later study waited on)."""
    port = _closed_port()
    t = time.monotonic()
    code, out = invoke([*command, "--no-progress"], env={"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{port}"})
    assert code == 2 and time.monotonic() - t < 30, out[-2000:]
    (line,) = [x for x in out.splitlines() if x.startswith("error:")]
    assert "MLFLOW_TRACKING_URI" in line and "unreachable" in line, line
    assert not (project / "mlruns" / "optuna.db").exists()



@pytest.fixture()
def silent_port():
    """A port that accepts connections and never answers (a hung database server, a firewall that swallows)."""
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield srv.getsockname()[1]
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    srv.close()


def test_a_study_storage_that_never_answers_is_refused_within_its_connect_bound(project: Path, silent_port):
    """Class 4 of issue #45: a PostgreSQL storage port that accepts but never answers printed nothing for 150 s and
    more (libpq waits forever by default). Now every connection to a server storage is bounded
    (``tuning.storage.CONNECT_TIMEOUT_S``): one ``error:`` line naming the storage (credentials masked), exit 2."""
    url = f"postgresql+psycopg2://hublab:PLANTEDpgpass99@127.0.0.1:{silent_port}/optuna"
    t = time.monotonic()
    code, out = invoke(_tune("--storage", url, study="silent"))
    took = time.monotonic() - t
    assert code == 2 and took < 60, (took, out[-2000:])
    assert "Traceback" not in out and "PLANTEDpgpass99" not in out, out[-3000:]
    (line,) = [x for x in out.splitlines() if x.startswith("error:")]
    assert f"127.0.0.1:{silent_port}" in line and "did not answer" in line, line


def _garbage_db(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(8192))


def _cut_db(path: Path) -> None:
    """A real SQLite database cut short (a copy or a full disk that stopped mid-file)."""
    import sqlite3

    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x TEXT)")
    con.executemany("INSERT INTO t VALUES (?)", [("x" * 200,)] * 2000)
    con.commit()
    con.close()
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize("damage", [_garbage_db, _cut_db], ids=["garbage", "cut short"])
@pytest.mark.parametrize("store", ["mlflow", "optuna"])
def test_a_damaged_tracking_or_study_database_is_one_located_line(project: Path, store: str, damage):
    """Class 2 of issue #45: ``mlruns/mlflow.db`` or ``mlruns/optuna.db`` garbage or cut short was a traceback (or,
    cut short, a failure deep in a run). Now one ``error:`` line names the file and what to do, before any work;
    the file is left as it was."""
    db = project / "mlruns" / f"{store}.db"
    damage(db)
    before = db.read_bytes()
    command = _run(BM25, "--limit", "1") if store == "mlflow" else _tune(study="damaged")
    code, out = invoke(command)
    assert code == 2 and "Traceback" not in out, out[-3000:]
    (line,) = [x for x in out.splitlines() if x.startswith("error:")]
    assert f"{store}.db" in line and ("not an SQLite database" in line or "cut short" in line), line
    assert "move it aside" in line, line
    assert db.read_bytes() == before


@pytest.mark.parametrize("store,command", [("mlflow", "run"), ("mlflow", "tune"), ("optuna", "tune")])
def test_a_store_locked_by_another_process_is_one_line_in_bounded_time(project: Path, monkeypatch, store: str,
                                                                       command: str):
    """Issue #45: ``mlruns/mlflow.db`` held in a write transaction by another process (a shell, a viewer) was a
    traceback from deep inside MLflow after its busy wait (the Optuna storage: a silent two-minute wait). Now the
    start's check waits ``SQLITE_LOCK_WAIT_S`` for it and then says so in one line, before any work."""
    import sqlite3

    from hublab import dburl

    monkeypatch.setattr(dburl, "SQLITE_LOCK_WAIT_S", 1.0)
    db = project / "mlruns" / f"{store}.db"
    db.parent.mkdir(exist_ok=True)
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        t0 = time.monotonic()
        code, out = invoke(_run(BM25, "--limit", "1") if command == "run" else _tune(study="locked"))
        took = time.monotonic() - t0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 2 and "Traceback" not in out, out[-3000:]
    (line,) = [x for x in out.splitlines() if x.startswith("error:")]
    assert f"{store}.db" in line and "locked by another process" in line, line
    assert took < 30, took
    assert not (project / "outputs" / "runs").exists()


def test_a_lock_met_later_is_recognised_through_the_libraries_wrapping(tmp_path: Path):
    """The CLI's last resort for a store locked after the start's check: SQLAlchemy's wrapping of SQLite's
    "database is locked" (as MLflow raises it) is recognised, and nothing else is."""
    import sqlite3

    import sqlalchemy

    from hublab.dburl import is_locked

    db = tmp_path / "x.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    engine = sqlalchemy.create_engine(f"sqlite:///{db}", connect_args={"timeout": 0.2})
    try:
        with pytest.raises(sqlalchemy.exc.OperationalError) as got, engine.connect() as con:
            con.execute(sqlalchemy.text("SELECT * FROM t"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        engine.dispose()
    assert is_locked(got.value)
    assert not is_locked(sqlalchemy.exc.OperationalError("SELECT 1", {}, sqlite3.OperationalError("no such table")))


def test_an_artifact_folder_that_takes_no_files_is_one_line_before_any_question(project: Path):
    """Issue #45: a read-only ``mlruns/artifacts`` (or experiment folder) failed ``hublab run`` at its first artifact,
    after its questions, with a traceback. The start's check probes where the run's artifacts go. A read-only folder
    stops no write by root (this suite's CI), so the test puts a file where the experiment's folder goes; the same
    probe was checked by hand as an unprivileged user on a read-only folder (docs/reliability.md)."""
    code, out = invoke(_run(BM25, "--limit", "1"))
    assert code == 0, out[-3000:]
    experiment = project / "mlruns" / "artifacts" / "hublab"
    shutil.rmtree(experiment)
    experiment.write_text("not a folder")
    code, out = invoke(_run(BM25, "--limit", "2"))
    assert code == 2 and "Traceback" not in out, out[-3000:]
    (line,) = [x for x in out.splitlines() if x.startswith("error:")]
    assert "MLflow artifacts folder" in line and "mlruns/artifacts/hublab cannot be written" in line, line
