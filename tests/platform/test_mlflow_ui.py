"""The MLflow UI shows a real HubLab run: ``mlflow server`` on 127.0.0.1 holds one small ``hublab run`` (BM25,
3 questions, logged through the server), and headless Chromium renders the run page and the run's Traces tab
(the MLflow 3 single-page app: ``#/experiments/<id>/runs/<run id>`` and ``…/traces``). The rendered DOM must
show the run's name and a headline metric; screenshots of both pages are kept in the test's tmp dir.

Needs the Debian ``chromium`` package (``.ci/run`` installs it); skips when it is missing, fails under ``CI=true``."""

from __future__ import annotations

import html
import re
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

import support.mlflow_servers as M
from support.browser import need_chromium, render, visible_text

HEADLINE = "recall_triples"  # MLflow name of a headline metric every run logs


@pytest.fixture(scope="session", autouse=True)
def _chromium_installed() -> None:
    """Checked before the server fixtures start (an autouse fixture of the widest scope runs first): skips, or
    fails under ``CI=true``, when Chromium is missing."""
    need_chromium()


@dataclass
class UiRun:
    server: M.MlflowServer
    experiment_id: str
    run_id: str
    run_name: str
    metrics: dict[str, float]

    @property
    def page(self) -> str:
        return f"{self.server.url}/#/experiments/{self.experiment_id}/runs/{self.run_id}"

    @property
    def traces_tab(self) -> str:
        # MLflow 3.17's run page names its "Traces" tab `evaluations` in the route (…/runs/<id>/traces shows the
        # same table but selects no tab)
        return f"{self.page}/evaluations"


@pytest.fixture(scope="module")
def ui_run(mlflow_server, mlflow_project: Path, tmp_path_factory) -> UiRun:
    """One real ``hublab run`` (bm25, 3 questions) logged to the server through MLFLOW_TRACKING_URI."""
    from mlflow.tracking import MlflowClient

    experiment = f"ui-{uuid.uuid4().hex[:8]}"
    root = M.copy_project(mlflow_project, tmp_path_factory.mktemp("ui") / "proj")
    p = subprocess.run(M.run_args("bm25", 3, experiment), cwd=root, env=M.run_env(root, mlflow_server.url),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    run = MlflowClient(mlflow_server.url).get_run(M.parse_run_json(p.stdout)["run_id"])
    return UiRun(mlflow_server, run.info.experiment_id, run.info.run_id, run.info.run_name, dict(run.data.metrics))


# ------------------------------------------------------------------ Traces tab
def assert_traces_tab_rendered(dom: str) -> None:
    """The run page with its Traces tab selected and the traces table's UI (search box, Trace ID column)."""
    assert re.search(r'<button[^>]*role="tab"[^>]*aria-selected="true"[^>]*>Traces</button>', dom), \
        "the Traces tab is not the selected tab"
    assert "Search traces" in dom, "the traces table's search box is not rendered"
    assert "Trace ID" in visible_text(dom), "the traces table (its Trace ID column) is not rendered"


def assert_trace_rows(dom: str, expected: list[str]) -> None:
    """Trace-row check for the Traces tab: every string in ``expected`` — a trace id (``tr-…``) or a request's
    text (the question) — is in the rendered traces table (cells hold the full value even where the screen
    truncates it). The table pages its rows: check a run's first rows, not hundreds."""
    text = visible_text(dom)
    missing = [e for e in expected if e not in text and e not in dom and html.escape(e) not in dom]
    assert not missing, f"traces not shown on the Traces tab: {missing[:5]}"


def run_trace_ids(run: UiRun) -> list[str]:
    """Trace ids the server holds for the run (one per question: ``hublab run`` traces every question)."""
    from mlflow.tracking import MlflowClient

    traces = MlflowClient(run.server.url).search_traces(locations=[run.experiment_id], run_id=run.run_id,
                                                        max_results=100, include_spans=False)
    return [t.info.trace_id for t in traces]


PROBE = """
import json, sys
import mlflow

mlflow.set_experiment(experiment_id=sys.argv[1])

@mlflow.trace
def ask(question):
    return "an answer"

with mlflow.start_run(run_name="trace-probe") as run:
    ask(sys.argv[2])
mlflow.flush_trace_async_logging()
trace = mlflow.MlflowClient().search_traces(locations=[sys.argv[1]], run_id=run.info.run_id)[0]
print(json.dumps({"run_id": run.info.run_id, "trace_id": trace.info.trace_id}))
"""


# ------------------------------------------------------------------ the tests
def test_run_page_shows_the_run_name_and_a_headline_metric(ui_run: UiRun, tmp_path: Path):
    dom = render(ui_run.page, tmp_path / "mlflow-run.png")
    text = visible_text(dom)
    assert ui_run.run_name in text, f"run name {ui_run.run_name!r} not rendered; page text: {text[:1500]}"
    assert HEADLINE in text, f"metric {HEADLINE} not rendered; page text: {text[:1500]}"
    value = ui_run.metrics[HEADLINE]
    shown = {repr(value), f"{value:g}", f"{value:.3f}".rstrip("0").rstrip("."), f"{value:.4g}"}
    assert any(s in text for s in shown), f"{HEADLINE}={value} not shown as any of {shown}"
    print(f"run page screenshot: {tmp_path / 'mlflow-run.png'}")


def test_traces_tab_renders(ui_run: UiRun, tmp_path: Path):
    dom = render(ui_run.traces_tab, tmp_path / "mlflow-run-traces.png")
    assert ui_run.run_name in visible_text(dom)
    assert_traces_tab_rendered(dom)
    ids = run_trace_ids(ui_run)
    assert ids, "hublab run logged no per-question trace to the server"
    assert_trace_rows(dom, ids[:5])  # the rows the first page of the table shows
    print(f"traces tab screenshot: {tmp_path / 'mlflow-run-traces.png'}")


def test_trace_row_helper_sees_a_logged_trace(ui_run: UiRun, tmp_path: Path):
    """``assert_trace_rows`` on a run that has a trace (one ``@mlflow.trace`` call logged to the same server by
    a separate process): it finds the trace id and the question, and fails on an id that is not there."""
    import json
    import subprocess
    import sys

    question = "Which papers use the evaluation method Case Study?"
    env = M.run_env(tmp_path, ui_run.server.url)
    p = subprocess.run([sys.executable, "-c", PROBE, ui_run.experiment_id, question], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    probe = json.loads(p.stdout.strip().splitlines()[-1])
    url = f"{ui_run.server.url}/#/experiments/{ui_run.experiment_id}/runs/{probe['run_id']}/evaluations"
    dom = render(url, tmp_path / "mlflow-trace-probe.png")
    assert_traces_tab_rendered(dom)
    assert_trace_rows(dom, [probe["trace_id"], question])
    with pytest.raises(AssertionError, match="traces not shown"):
        assert_trace_rows(dom, ["tr-00000000000000000000000000000000"])


# ------------------------------------------------------------------ the committed comparison (issue #30)
def test_the_committed_comparison_shows_its_headline_columns_and_chart(mlflow_server, mlflow_project: Path,
                                                                        tmp_path: Path):
    """``hublab report publish`` (the quick start's last step) logs the committed ``reports/summary/methods.csv``
    as the comparison run; its shared view opens the runs table with the headline columns and the rows expanded
    (the UI's default shows no metric column), and the parent run carries the chart. A second publish logs
    nothing (a comparison is there)."""
    import json
    import shutil

    from mlflow.tracking import MlflowClient

    root = M.copy_project(mlflow_project, tmp_path / "proj")
    shutil.copytree(M.REPO / "reports" / "summary", root / "reports" / "summary")
    experiment = f"compare-{uuid.uuid4().hex[:8]}"
    args = [*M.run_args("bm25", 1, experiment)[:3], "report", "publish", "--experiment", experiment, "--json"]
    env = M.run_env(root, mlflow_server.url)
    p = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.startswith("{"), p.stdout[-3000:] + p.stderr[-3000:]
    out = json.loads(p.stdout)
    assert out["published"] and out["view"].startswith("#/experiments/"), out
    client = MlflowClient(mlflow_server.url)
    parent = client.get_run(out["parent_run"])
    assert parent.data.tags["hublab.source"].startswith("from the committed reports")
    assert "from the committed reports" in parent.info.run_name
    rows = (M.REPO / "reports/summary/methods.csv").read_text().strip().splitlines()[1:]
    assert parent.data.tags["hublab.n_children"] == str(len(rows))

    # the default width of issue #44's done-when: the table renders only the columns in view
    dom = render(f"{mlflow_server.url}/{out['view']}", tmp_path / "comparison.png", window="1400,1400")
    text = visible_text(dom)
    # (the grid renders the columns inside the window only: p_vs_best and changed_params are one scroll away)
    for column in ("map_at_10_triples", "diff_from_best_map_at_10", "hit_at_10_triples"):
        assert column in text, f"column {column} not shown; page text: {text[:2000]}"
    # rows grouped by question set (each group open), the difference from the best as text with its interval
    for group in ("GV1 (rebuilt), all questions (170)", "GV3 (ORKG export), all questions (170)"):
        assert group in text, f"group {group} not shown; page text: {text[:3000]}"
    assert "HubLink · tuned · gv1" in text, f"the comparison's rows are not shown; page text: {text[:2000]}"
    tuned = next(r for r in rows if r.startswith("hublink,HubLink,gv3_orkg,all,tuned,"))
    diff = tuned.split(",")[18]  # diff_from_best_map_at_10: on the first screen, beside MAP@10
    assert diff.startswith("-0.") and f" {diff} " in text, (diff, text[:3000])
    assert "Sort: map_at_10_triples" in text and "You're viewing a shared view" in text, text[:2000]
    # headers and run names are not cut: the view sets the columns' widths
    state = json.loads(client.get_experiment(parent.info.experiment_id).tags["mlflow.sharedViewState.fair-bound20"])
    assert state["columnWidths"]["attributes.`Run Name`"] >= 230 and state["groupBy"]["groupByKeys"][0] == {
        "mode": "tag", "groupByData": "question_set"}
    assert {"tags.`diff_95ci`", "tags.`p_vs_best`", "tags.`changed_params`"} <= set(state["selectedColumns"])
    artifacts = render(f"{mlflow_server.url}/#/experiments/{parent.info.experiment_id}/runs/{parent.info.run_id}"
                       "/artifacts", tmp_path / "comparison-artifacts.png")
    assert "methods.png" in visible_text(artifacts), "the chart is not among the parent run's artifacts"

    again = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and json.loads(again.stdout)["published"] is False, again.stdout
    print(f"comparison view screenshot: {tmp_path / 'comparison.png'}")
