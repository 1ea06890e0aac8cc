"""Run identity, partial-run scope, secrets, degradation as a result, portable tracking and the run lock
(docs/reliability.md lists each failure, what happens now and which test here shows it)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hublab.pipeline.config import PipelineConfig
from hublab.retrievers.base import Context, RetrievalResult, Retriever
from hublab.retrievers.registry import register

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-test-123-do-not-log"


@pytest.fixture()
def project(tmp_path: Path, shared: Path, gv3_orkg_graph, monkeypatch) -> Path:
    from conftest import make_project
    from hublab.config import _load_params
    from hublab.datasets.kgqa_csv import load_kgqa_csv

    pairs = load_kgqa_csv(shared / "data/kgqa/flat_distributed.csv")[:6]
    yield make_project(tmp_path / "proj", shared, gv3_orkg_graph, pairs, monkeypatch)
    _load_params.cache_clear()


def _contexts(root: Path) -> Path:
    from hublab.datasets.model import read_jsonl

    pairs = read_jsonl(root / "data/kgqa/gv3_orkg.jsonl")
    path = root / "fixed.json"
    path.write_text(json.dumps({p.question: list(p.golden_triples)[:1] for p in pairs}))
    return path


def _fixed(root: Path, **extra) -> PipelineConfig:
    return PipelineConfig.from_dict({"name": "fixed", "retriever": {"type": "fixed",
                                                                    "params": {"path": str(_contexts(root))}},
                                     **extra})


def _client(root: Path):
    from mlflow.tracking import MlflowClient

    from hublab.tracking.mlflow_log import tracking_uri

    return MlflowClient(tracking_uri(root))


# ---- 1. a short run never overwrites the full run --------------------------------------------------------------

@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_limit_and_inputs_change_the_run_identity(project: Path):
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    cfg = _fixed(project)
    full = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", track_carbon=False, progress=False))
    short = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", limit=2, track_carbon=False, progress=False))
    assert full.scope == "full" and full.n_questions == 6
    assert short.scope == "2 of 6 questions" and short.n_questions == 2
    assert short.run_id != full.run_id and short.output_dir != full.output_dir
    # the full run's MLflow run and checkpoint still say 6 questions
    c = _client(project)
    assert c.get_run(full.run_id).data.metrics["n_questions"] == 6
    assert sum(1 for _ in open(Path(full.output_dir) / "predictions.jsonl")) == 6
    run = c.get_run(short.run_id)
    assert run.data.tags["scope"] == "2 of 6 questions" and run.data.tags["hublab.full_run"] == "false"
    assert "[2 of 6 questions]" in run.data.tags["mlflow.runName"]
    assert c.get_run(full.run_id).data.tags["scope"] == "full"
    # a limit covering the dataset is the full run; the same command resumes the same run
    again = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", limit=100, track_carbon=False, progress=False))
    assert again.run_id == full.run_id
    # changing the dataset content changes the identity
    ds = project / "data/kgqa/gv3_orkg.jsonl"
    ds.write_text(ds.read_text().replace("\n", "\n", 1) + "\n")
    changed = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", track_carbon=False, progress=False))
    assert changed.identity["run_identity"] != full.identity["run_identity"]
    for key in ("config_hash", "graph_sha256", "dataset_sha256", "limit", "src_sha256", "package", "experiment"):
        assert key in full.identity


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_partial_eval_report_goes_elsewhere(project: Path):
    from hublab.experiment.dvc_report import write_eval_report
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    cfg = _fixed(project)
    target = project / "reports/eval/fixed-gv3_orkg"
    full = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", track_carbon=False, progress=False))
    assert write_eval_report(full, target) == target
    before = (target / "metrics.json").read_text()
    short = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", limit=2, track_carbon=False, progress=False))
    written = write_eval_report(short, target)
    assert written != target and written.name.endswith("partial-2of6")
    assert (target / "metrics.json").read_text() == before
    assert json.loads((written / "scope.json").read_text())["scope"] == "2 of 6 questions"


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_partial_compare_report_never_overwrites_the_full_table(project: Path):
    from hublab.config import settings
    from hublab.experiment.comparison.single_graph import compare_methods, write_report

    pipes = project / "pipelines"
    pipes.mkdir()
    ctx = _contexts(project)
    (pipes / "fixed.yaml").write_text(f"name: fixed\nretriever: {{type: fixed, params: {{path: {ctx}}}}}\n")
    st = settings()
    out = project / "reports/compare_gv3_orkg"
    res = compare_methods([pipes / "fixed.yaml"], "gv3_orkg", "gv3_orkg", settings=st, limit=None,
                          experiment="cmp", track_carbon=False)
    _, md_full = write_report(res, out, "gv3_orkg", "gv3_orkg")
    full_text = md_full.read_text()
    assert md_full.name == "compare.md" and "PARTIAL" not in full_text
    res = compare_methods([pipes / "fixed.yaml"], "gv3_orkg", "gv3_orkg", settings=st, limit=2,
                          experiment="cmp", track_carbon=False)
    csv_p, md_p = write_report(res, out, "gv3_orkg", "gv3_orkg")
    assert md_p.name == "compare.partial-2q.md" and csv_p.name == "compare.partial-2q.csv"
    assert md_p.read_text().startswith("**PARTIAL RUN — scope: 2 of 6 questions")
    assert md_full.read_text() == full_text


# ---- 4. secrets --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("doc", [
    "retriever: {type: fixed, params: {path: x.json, openai_api_key: sk-abc}}",
    "retriever: {type: fixed, params: {path: x.json}}\npre_retrieval: {enabled: true, llm: {api_key: sk-abc}}",
    "retriever: {type: fixed, params: {path: x.json}}\nevaluation: {judge_llm: {backend: openai, token: t0k3n}}",
    "retriever: {type: fixed, params: {path: x.json, extra: [{password: hunter22}]}}",
])
def test_nested_secrets_are_refused_at_load_time(tmp_path: Path, doc: str):
    from hublab.errors import InputError
    from hublab.pipeline.config import load_pipeline

    p = tmp_path / "p.yaml"
    p.write_text("name: x\n" + doc + "\n")
    with pytest.raises(InputError, match="secrets must not be in config files"):
        load_pipeline(p)


def test_no_secret_value_reaches_mlflow_artifacts_or_checkpoints(project: Path, monkeypatch):
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("MY_LLM_KEY", SECRET + "-named")
    cfg = _fixed(project, evaluation={"judge_llm": {"backend": "openai", "model": "m", "api_key_env": "MY_LLM_KEY"}})
    # a secret smuggled past load-time checks (e.g. set programmatically) is still scrubbed
    cfg.evaluation["note"] = f"token is {SECRET}-named"
    cfg.evaluation["openai_api_key"] = SECRET
    s = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", limit=2, track_carbon=False, progress=False))
    run = _client(project).get_run(s.run_id)
    assert run.data.params["evaluation.judge_llm.api_key_env"] == "MY_LLM_KEY"
    assert run.data.params["evaluation.note"] == "token is ***"
    blobs = [json.dumps(run.data.params), json.dumps(run.data.tags)]
    for p in (project / "mlruns").rglob("*"):
        if p.is_file() and p.suffix != ".db":
            blobs.append(p.read_text(errors="replace"))
    for p in (project / "outputs").rglob("*"):
        if p.is_file():
            blobs.append(p.read_text(errors="replace"))
    blobs.append((project / "mlruns/mlflow.db").read_bytes().decode("latin-1"))
    assert any("predictions.csv" in str(p) for p in (project / "mlruns").rglob("*"))
    for b in blobs:
        assert SECRET not in b


def test_no_secret_in_llm_caches_or_logs_after_real_llm_calls(project: Path, monkeypatch, caplog, llama_server):
    """The same with real LLM calls over HTTP (a generation pipe against the llama.cpp server, the key named by
    ``api_key_env``): nothing under .cache (completion and embedding caches), mlruns, outputs, nor any log record
    holds the key."""
    import logging

    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    monkeypatch.setenv("MY_LLM_KEY", SECRET)
    llm = {"backend": "openai", "model": "gemma3-270m", "base_url": llama_server, "api_key_env": "MY_LLM_KEY",
           "max_tokens": 16, "timeout_s": 120}
    cfg = PipelineConfig.from_dict({"name": "gen", "retriever": {"type": "fixed", "params": {"path": str(_contexts(
        project))}}, "llm": llm, "generation": {"enabled": True}})
    caplog.set_level(logging.DEBUG)
    s = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", limit=1, track_carbon=False, progress=False))
    assert s.metrics["llm_tokens"] > 0  # the call really went over HTTP
    blobs = [r.getMessage() for r in caplog.records] + [caplog.text]
    for folder in (".cache", "mlruns", "outputs"):
        for p in (project / folder).rglob("*"):
            if p.is_file():
                blobs.append(p.read_bytes().decode("latin-1"))
    assert any((project / ".cache").rglob("*.sqlite"))
    for b in blobs:
        assert SECRET not in b


# ---- 3. degradation is a result ------------------------------------------------------------------------------------

@register("degrading")
class DegradingRetriever(Retriever):
    """Question i: i % 3 == 0 raises, == 1 falls back (LLM step degraded), == 2 is clean."""

    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        n = DegradingRetriever.calls = getattr(DegradingRetriever, "calls", 0) + 1
        if DegradingRetriever.fail and (n - 1) % 3 == 0:
            raise RuntimeError("backend down")
        triples = self.resources.graph.outgoing(topic_entity_id or "R659055")[:3]
        fb = ["partial_answer: timeout"] if (n - 1) % 3 == 1 else []
        return RetrievalResult([Context(t.render(), t) for t in triples], fallbacks=fb)


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_failure_share_over_threshold_fails_the_run_and_keeps_the_checkpoint(project: Path):
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    DegradingRetriever.calls, DegradingRetriever.fail = 0, True
    cfg = PipelineConfig.from_dict({"name": "deg", "retriever": {"type": "degrading"},
                                    "evaluation": {"max_failure_share": 0.5}})
    s = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", track_carbon=False, progress=False))
    assert s.metrics["n_errors"] == 2 and s.metrics["n_llm_fallbacks"] == 2 and s.metrics["n_degraded"] == 2
    assert s.metrics["failure_share"] == pytest.approx(4 / 6)
    assert s.failed and s.exit_code == 1 and "failure share 67% > 50%" in s.failure_reason
    run = _client(project).get_run(s.run_id)
    assert run.info.status == "FAILED" and "failure share" in run.data.tags["hublab.failure"]
    assert run.data.metrics["n_llm_fallbacks"] == 2 and "n_llm_errors" in run.data.metrics
    assert "llm_cost" in run.data.metrics and "n_llm_retries" in run.data.metrics
    assert (Path(s.output_dir) / "predictions.jsonl").exists()
    # resume: only the errored questions run again; the same MLflow run goes on
    DegradingRetriever.calls, DegradingRetriever.fail = 0, False
    again = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", track_carbon=False, progress=False))
    assert DegradingRetriever.calls == 2 and again.run_id == s.run_id
    assert again.metrics["n_errors"] == 0 and not again.failed
    assert _client(project).get_run(s.run_id).info.status == "FINISHED"


def test_cli_exit_code_on_failed_run(project: Path, monkeypatch):
    from typer.testing import CliRunner

    from hublab.cli import app

    DegradingRetriever.calls, DegradingRetriever.fail = 0, True
    p = project / "deg.yaml"
    p.write_text("name: deg\nretriever: {type: degrading}\nevaluation: {max_failure_share: 0.1}\n")
    monkeypatch.chdir(project)
    res = CliRunner().invoke(app, ["run", str(p), "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--no-carbon"])
    assert res.exit_code == 1, res.output
    assert "run FAILED" in res.output and "failure share" in res.output


def test_llm_usage_and_time_budget_are_counted_per_question():
    from hublab.datasets.model import QAPair
    from hublab.experiment.aggregate import aggregate_records
    from hublab.experiment.question import run_question
    from hublab.llm.base import TokenUsage

    deadlines = []

    class FakeLLM:
        def reset_usage(self):
            return TokenUsage(10, 5, 2, 0, errors=1, retries=3, cost=0.25)

        def set_deadline(self, deadline):
            deadlines.append(deadline)

    class Out:
        context_strings, answer, reason, notes, sources, runtime_s = [], "a", None, [], [], 0.2
        fallbacks = ["rerank: bad json"]

    class FakePipe:
        def all_llms(self):
            return [FakeLLM()]

        def run(self, *a):
            time.sleep(0.05)
            return Out()

    pair = QAPair(uid="u1", question="q?", golden_answer="g", golden_triples=["(R1,p,R2)"],
                  topic_entity_id=None, topic_entity_value=None)
    rec = run_question(FakePipe(), None, 0, pair, 10, question_timeout_s=0.01)
    assert (rec["n_llm_errors"], rec["n_llm_retries"], rec["n_llm_fallbacks"], rec["llm_cost"]) == (1, 3, 1, 0.25)
    assert rec["timed_out"] and rec["degraded"]
    assert deadlines[0] is not None and deadlines[-1] is None  # the budget bounds the calls, then is lifted
    agg = aggregate_records([rec, rec])
    assert agg["n_llm_retries"] == 6 and agg["llm_cost"] == 0.5 and agg["n_timeouts"] == 2
    assert agg["failure_share"] == 1.0


def test_run_time_budget_stops_and_fails(project: Path):
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    cfg = PipelineConfig.from_dict({"name": "slow", "retriever": {"type": "sleepy", "params": {}},
                                    "evaluation": {"run_timeout_s": 0.3}})
    s = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", track_carbon=False, progress=False))
    assert s.failed and "run time budget" in s.failure_reason and s.n_questions < 6
    assert _client(project).get_run(s.run_id).info.status == "FAILED"


@register("sleepy")
class SleepyRetriever(Retriever):
    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        time.sleep(float(os.environ.get("SLEEPY_S", "0.2")))
        triples = self.resources.graph.outgoing(topic_entity_id or "R659055")[:3]
        return RetrievalResult([Context(t.render(), t) for t in triples])


# ---- 5. portable tracking -------------------------------------------------------------------------------------------

def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_copied_checkout_writes_its_own_artifacts(project: Path, tmp_path: Path, monkeypatch):
    from hublab.config import _load_params
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    cfg = _fixed(project)
    first = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", limit=2, track_carbon=False, progress=False))
    old_art = project / "mlruns" / "artifacts"
    before = _tree(old_art)
    copy = tmp_path / "copy"
    shutil.copytree(project, copy, symlinks=True)
    monkeypatch.setenv("HUBLAB_ROOT", str(copy))
    _load_params.cache_clear()
    cfg2 = _fixed(copy)
    s = run_experiment(RunRequest.build(cfg2, "gv3_orkg", "gv3_orkg", limit=3, track_carbon=False, progress=False))
    assert _tree(old_art) == before  # nothing written into the old checkout
    c = _client(copy)
    assert c.get_run(s.run_id).info.artifact_uri.startswith((copy / "mlruns/artifacts").resolve().as_uri())
    # the copied old run points into the copy too, and its artifacts are readable there
    old_uri = c.get_run(first.run_id).info.artifact_uri
    assert old_uri.startswith((copy / "mlruns/artifacts").resolve().as_uri())
    assert {"predictions.csv"} <= {a.path for a in c.list_artifacts(first.run_id)}


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_mlflow_tracking_uri_from_the_environment_is_honoured(project: Path, tmp_path: Path, monkeypatch):
    from mlflow.tracking import MlflowClient

    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    (project / "mlruns" / "mlflow.db").unlink()  # no project store (make_project copies a migrated one in)
    other = tmp_path / "elsewhere"
    other.mkdir()
    uri = f"sqlite:///{other / 'x.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.chdir(other)
    s = run_experiment(RunRequest.build(_fixed(project), "gv3_orkg", "gv3_orkg", limit=1, track_carbon=False,
                                        progress=False, log_artifacts=False))
    assert MlflowClient(uri).get_run(s.run_id).info.status == "FINISHED"
    assert not (project / "mlruns" / "mlflow.db").exists()


# ---- 6. lock before shared state; 3. a killed run is marked KILLED and resumed ----------------------------------

SCRIPT = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {tests!r})
    from hublab.env import apply_offline_defaults
    apply_offline_defaults()
    import test_run_identity  # registers 'sleepy'
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment
    from hublab.pipeline.config import PipelineConfig
    cfg = PipelineConfig.from_dict({{"name": "slow", "retriever": {{"type": "sleepy", "params": {{}}}}}})
    try:
        s = run_experiment(cfg, "gv3_orkg", "gv3_orkg", track_carbon=False, progress=False)
    except Exception as exc:
        print("REFUSED", type(exc).__name__, exc, flush=True)
        sys.exit(3)
    print("DONE", s.run_id, s.n_questions, flush=True)
""")


def _spawn(project: Path, script: Path, sleep_s: str) -> subprocess.Popen:
    env = dict(os.environ, HUBLAB_ROOT=str(project), SLEEPY_S=sleep_s,
               PYTHONPATH=os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    env.pop("MLFLOW_TRACKING_URI", None)  # mlflow.set_tracking_uri in this process exported it
    return subprocess.Popen([sys.executable, str(script)], cwd=project, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow  # subprocesses
def test_second_process_changes_nothing_and_killed_run_is_marked_and_resumed(project: Path):
    script = project / "go.py"
    script.write_text(SCRIPT.format(tests=str(Path(__file__).resolve().parent)))
    # 5 s a question: A still holds the lock while B starts, however loaded the machine (B's start-up took over the
    # 9 s of six 1.5 s questions under a full suite); A is killed right after B, so the wait costs B's start-up only
    a = _spawn(project, script, "5")
    runs = project / "outputs" / "runs"
    deadline = time.time() + 120
    ckpt = None
    while time.time() < deadline:  # wait until A has finished one question
        found = list(runs.glob("*/predictions.jsonl")) if runs.exists() else []
        if found and found[0].read_text().count("\n") >= 1:
            ckpt = found[0]
            break
        time.sleep(0.2)
    assert ckpt is not None, a.communicate()[0] if a.poll() is not None else "A did not start"
    state = json.loads((ckpt.parent / "state.json").read_text())
    c = _client(project)
    assert c.get_run(state["run_id"]).info.status == "RUNNING"
    b = _spawn(project, script, "0")
    out_b, _ = b.communicate(timeout=120)
    assert b.returncode == 3 and "RunLocked" in out_b, out_b
    # B changed nothing: A's run is still RUNNING, A's checkpoint still there and growing
    assert c.get_run(state["run_id"]).info.status == "RUNNING"
    assert json.loads((ckpt.parent / "state.json").read_text()) == state
    assert ckpt.exists()
    os.kill(a.pid, signal.SIGKILL)
    a.wait()
    n_before = ckpt.read_text().count("\n")
    assert n_before < 6 and c.get_run(state["run_id"]).info.status == "RUNNING"  # what a kill leaves behind
    d = _spawn(project, script, "0")
    out_d, _ = d.communicate(timeout=120)
    assert d.returncode == 0 and f"DONE {state['run_id']} 6" in out_d, out_d
    run = c.get_run(state["run_id"])
    assert run.info.status == "FINISHED" and run.data.tags.get("hublab.resumed_after_kill") == "true"
    assert "marked KILLED" in run.data.tags["hublab.killed_detected"]
