"""Bad input never ends in a traceback: each case runs the real ``hublab`` entry point (``hublab.cli.main``,
what the console script calls) and must exit non-zero with one ``error:`` line that locates the problem
(file, row/entry, field) — the table in docs/reliability.md lists them."""

from __future__ import annotations

import io
import json
import shutil
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
KGQA_COLUMNS = None  # read lazily from the real CSV header


def run_cli(args: list[str]) -> tuple[int, str]:
    from hublab.cli import main

    err, out = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = ["hublab", *args]
    try:
        with redirect_stderr(err), redirect_stdout(out):
            main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0) if not isinstance(exc.code, str) else 1
    finally:
        sys.argv = old
    return code, err.getvalue() + out.getvalue()


@pytest.fixture()
def project(tmp_path: Path, shared: Path, monkeypatch) -> Path:
    """A project whose params.yaml points every input at files under ``tmp_path/in`` (copies of the real ones)."""
    from hublab.config import _load_params

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    inp = tmp_path / "in"
    (inp / "kgqa").mkdir(parents=True)
    shutil.copy(shared / "data/orkg/gv3_flat_distributed.json", inp / "export.json")
    shutil.copy(shared / "data/orkg/ECSA-ICSA-Proceedings.bib", inp / "papers.bib")
    for f in (shared / "data/kgqa").glob("*.csv"):
        shutil.copy(f, inp / "kgqa" / f.name)
    params["paths"].update({"shared": str(shared), "orkg_export": str(inp / "export.json"),
                            "bibliography": str(inp / "papers.bib"), "kgqa_dir": str(inp / "kgqa"),
                            "evidence": str(shared / "data/orkg/evidence-values.xlsx"),
                            "thesis_results": str(shared / "reference/thesis_results")})
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.copytree(ROOT / "pipelines", tmp_path / "pipelines")
    monkeypatch.setenv("HUBLAB_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    _load_params.cache_clear()
    return tmp_path


def _edit_json(path: Path, fn: Callable[[list], None]) -> None:
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def _edit_text(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def _csv(p: Path) -> Path:
    return p / "in" / "kgqa" / "flat_distributed.csv"


def _pipeline(p: Path, text: str) -> str:
    f = p / "bad.yaml"
    f.write_text(text)
    return str(f)


def _pred(p: Path, text: str | bytes) -> str:
    f = p / "pred.csv"
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(f)


SNAPSHOT = ["data", "snapshot"]
GRAPHS = ["data", "graphs"]
DATASETS = ["data", "datasets", "--only", "gv3_orkg"]
PRED_HEADER = "uid,question,golden_answer,generated_answer,retrieved_context,golden_triples\n"

# (case id, setup(project) -> argv, substrings the error must contain)
CASES: list[tuple[str, Callable[[Path], list[str]], list[str]]] = [
    ("export: not JSON", lambda p: ((p / "in/export.json").write_text("[{"), SNAPSHOT)[1],
     ["export.json", "invalid JSON"]),
    ("export: not UTF-8", lambda p: ((p / "in/export.json").write_bytes(b'[{"uid": "\xff"}]'), SNAPSHOT)[1],
     ["export.json", "not UTF-8"]),
    ("export: top level not a list", lambda p: ((p / "in/export.json").write_text("{}"), SNAPSHOT)[1],
     ["export.json", "expected a JSON list"]),
    ("export: triple without predicate", lambda p: (_edit_json(p / "in/export.json", lambda d: d[5].pop("predicate")),
                                                    SNAPSHOT)[1], ["export.json", "row 5"]),
    ("export: uid not a string", lambda p: (_edit_json(
        p / "in/export.json", lambda d: d[3]["entity_subject"].__setitem__("uid", 7)), SNAPSHOT)[1],
     ["row 3", "entity_subject.uid"]),
    ("export: missing file", lambda p: ((p / "in/export.json").unlink(), SNAPSHOT)[1], ["export.json", "not found"]),
    ("bib: unterminated value", lambda p: (_edit_text(p / "in/papers.bib", "title = {", "title = {{"), GRAPHS)[1],
     ["papers.bib"]),
    ("bib: not UTF-8", lambda p: ((p / "in/papers.bib").write_bytes(b"@inproceedings{a,\n title={\xff}}\n"),
                                  GRAPHS)[1], ["papers.bib", "not UTF-8"]),
    ("kgqa csv: not UTF-8", lambda p: (_csv(p).write_bytes(_csv(p).read_bytes().replace(b"the", b"th\xff", 1)),
                                       DATASETS)[1], ["flat_distributed.csv", "not UTF-8", "row"]),
    ("kgqa csv: missing column", lambda p: (_csv(p).write_text(
        "\n".join(line.split(",", 1)[1] if i == 0 else line for i, line in
                  enumerate(_csv(p).read_text(encoding="utf-8").split("\n"))), encoding="utf-8"), DATASETS)[1],
     ["flat_distributed.csv", "row 0"]),
    ("kgqa csv: empty", lambda p: (_csv(p).write_text(""), DATASETS)[1], ["flat_distributed.csv"]),
    ("kgqa csv: golden triples not a list", lambda p: (_edit_text(_csv(p), "['(", "'(", 1), DATASETS)[1],
     ["flat_distributed.csv", "golden_triples"]),
    ("pipeline: not YAML", lambda p: ["run", _pipeline(p, "retriever: [unclosed"), "--graph", "gv3_orkg",
                                      "--dataset", "gv3_orkg"], ["bad.yaml", "invalid YAML"]),
    ("pipeline: unknown retriever", lambda p: ["run", _pipeline(p, "retriever: {type: hub_link}"), "--graph",
                                               "gv3_orkg", "--dataset", "gv3_orkg"], ["bad.yaml", "valid:"]),
    ("pipeline: parameter typo", lambda p: ["run", _pipeline(p, "retriever: {type: hublink, params: "
                                                                "{numbr_of_hubs: 3}}"), "--graph", "gv3_orkg",
                                            "--dataset", "gv3_orkg"],
     ["bad.yaml", "retriever.params.numbr_of_hubs", "valid:"]),
    ("pipeline: wrong type", lambda p: ["run", _pipeline(p, "retriever: {type: hublink, params: "
                                                            "{number_of_hubs: thirty}}"), "--graph", "gv3_orkg",
                                        "--dataset", "gv3_orkg"], ["retriever.params.number_of_hubs"]),
    ("pipeline: out of range", lambda p: ["run", _pipeline(p, "retriever: {type: hublink, params: "
                                                              "{top_paths_to_keep: -1}}"), "--graph", "gv3_orkg",
                                          "--dataset", "gv3_orkg"], ["retriever.params.top_paths_to_keep"]),
    ("pipeline: evaluation.k negative", lambda p: ["run", _pipeline(p, "retriever: {type: bm25}\nevaluation: {k: -5}"),
                                                   "--graph", "gv3_orkg", "--dataset", "gv3_orkg"],
     ["bad.yaml", "evaluation.k"]),
    ("pipeline: secret in the file", lambda p: ["run", _pipeline(p, "retriever: {type: bm25}\nllm: {backend: openai, "
                                                                   "api_key: sk-123}"), "--graph", "gv3_orkg",
                                                "--dataset", "gv3_orkg"], ["bad.yaml", "llm.api_key"]),
    ("pipeline: not UTF-8", lambda p: ["run", ((p / "bad.yaml").write_bytes(b"name: \xff\n"), str(p / "bad.yaml"))[1],
                                       "--graph", "gv3_orkg", "--dataset", "gv3_orkg"], ["bad.yaml", "not UTF-8"]),
    ("pipeline: missing file", lambda p: ["run", str(p / "nope.yaml"), "--graph", "gv3_orkg", "--dataset",
                                          "gv3_orkg"], ["nope.yaml", "not found"]),
    ("cli: unknown graph", lambda p: ["index", "--pipeline", str(p / "pipelines/bm25.yaml"), "--graph", "gv9"],
     ["unknown graph 'gv9'", "valid: gv1"]),
    ("cli: --limit 0", lambda p: ["run", str(p / "pipelines/bm25.yaml"), "--graph", "gv3_orkg", "--dataset",
                                  "gv3_orkg", "--limit", "0"], ["--limit"]),
    ("predictions: missing columns", lambda p: ["eval-file", _pred(p, "uid,question\n1,q\n"), "--output",
                                                str(p / "o.csv")], ["pred.csv", "missing columns"]),
    ("predictions: unparseable context", lambda p: ["eval-file", _pred(p, PRED_HEADER + '1,q,a,b,"[(x",[]\n'),
                                                    "--output", str(p / "o.csv")],
     ["pred.csv", "row 1", "retrieved_context"]),
    ("predictions: not UTF-8", lambda p: ["eval-file", _pred(p, PRED_HEADER.encode() + b"1,q,a,\xff,[],[]\n"),
                                          "--output", str(p / "o.csv")], ["pred.csv", "not UTF-8"]),
    ("predictions: ragged row", lambda p: ["eval-file", _pred(p, PRED_HEADER + "1,q,a\n"), "--output",
                                           str(p / "o.csv")], ["pred.csv", "row 1"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_a_located_error_not_a_traceback(case, project: Path):
    _, setup, expected = case
    argv = setup(project)
    code, output = run_cli(argv)
    assert code != 0, output
    assert "Traceback" not in output, output
    for piece in expected:
        assert piece in output, (piece, output[-2000:])


def test_battery_is_large_enough():
    assert len(CASES) >= 20
