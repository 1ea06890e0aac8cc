"""An LLM run explains itself before its first question (issue #21 item 4): no key, nothing listening, a refused
key or a model the server does not serve stops ``hublab run`` at once with one line saying what to do; ``--dry-run``
prints the run's token and cost estimate from the thesis's figure for the method and does nothing else."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import yaml

from support.llm_servers import ModelsServer
from support.local_procs import free_port

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def project(tmp_path, shared, monkeypatch) -> Path:
    """A project that has only params.yaml (paths into ../shared) and the shipped pipelines: nothing built."""
    from conftest import pipelines_project

    pipelines_project(tmp_path, shared, monkeypatch)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return tmp_path


def hublab(*args: str) -> tuple[int, str, str, float]:
    """``hublab ARGS`` in-process: (exit code, stdout, stderr with the ``error:`` lines, seconds)."""
    from conftest import invoke_cli

    t0 = time.perf_counter()
    code, out, err = invoke_cli(list(args))
    return code, out, err, time.perf_counter() - t0


def run_args(shared: Path, pipeline: str, *extra: str) -> list[str]:
    return ["run", f"pipelines/{pipeline}.yaml", "--graph", "gv1", "--dataset",
            str(shared / "data/kgqa/reduced_deep_distributed.csv"), "--no-carbon", *extra]


@pytest.fixture()
def models_server():
    servers: list[ModelsServer] = []

    def start(models: list[str], key: str | None = None) -> ModelsServer:
        servers.append(ModelsServer(models, key))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


def test_no_api_key_stops_at_once_with_the_variable_and_the_flag(project, shared):
    code, out, err, elapsed = hublab(*run_args(shared, "difar"))
    line = _one_error_line(err)
    assert code == 2 and elapsed < 5, (code, elapsed)
    assert "needs an API key" in line and "OPENAI_API_KEY" in line and "--llm-base-url" in line
    assert not (project / "outputs").exists() and not (project / "mlruns").exists()  # no question was run


def test_nothing_listening_stops_at_once(project, shared):
    port = free_port()
    code, out, err, elapsed = hublab(*run_args(shared, "difar", "--llm-base-url", f"http://127.0.0.1:{port}/v1"))
    line = _one_error_line(err)
    assert code == 2 and elapsed < 5, (code, elapsed)
    assert f"nothing answers at 127.0.0.1:{port}" in line and "--llm-base-url" in line
    assert not (project / "outputs").exists()


def test_a_model_the_server_does_not_serve_is_named_with_what_it_serves(project, shared, models_server):
    srv = models_server(["alpha-7b", "beta-13b"])
    code, out, err, elapsed = hublab(*run_args(shared, "difar", "--llm-base-url", srv.url, "--llm-model", "gamma"))
    line = _one_error_line(err)
    assert code == 2 and srv.requests == 1
    assert "does not serve model gamma (it lists: alpha-7b, beta-13b)" in line and "--llm-model" in line


def test_a_refused_key_is_named(project, shared, models_server, monkeypatch):
    srv = models_server(["alpha-7b"], key="good-key")
    monkeypatch.setenv("HUBLAB_LLM_API_KEY_ENV", "MY_SERVER_KEY")
    monkeypatch.setenv("MY_SERVER_KEY", "wrong-key")
    code, out, err, _ = hublab(*run_args(shared, "difar", "--llm-base-url", srv.url, "--llm-model", "alpha-7b"))
    line = _one_error_line(err)
    assert code == 2 and "refused the request (HTTP 401)" in line and "$MY_SERVER_KEY" in line
    assert "wrong-key" not in err


def test_a_served_model_passes_the_check(project, models_server, monkeypatch):
    from hublab.pipeline.config import load_pipeline
    from hublab.preflight import check_llm

    srv = models_server(["alpha-7b", "beta-13b"])
    monkeypatch.setenv("HUBLAB_LLM_BASE_URL", srv.url)
    monkeypatch.setenv("HUBLAB_LLM_MODEL", "beta-13b")
    assert check_llm(load_pipeline(project / "pipelines/difar.yaml")) == []
    ollama = models_server(["llama3.2:latest", "qwen2.5:7b"])  # Ollama lists tags, serves the bare name as :latest
    monkeypatch.setenv("HUBLAB_LLM_BASE_URL", ollama.url)
    monkeypatch.setenv("HUBLAB_LLM_MODEL", "llama3.2")
    assert check_llm(load_pipeline(project / "pipelines/difar.yaml")) == []
    monkeypatch.setenv("HUBLAB_LLM_MODEL", "beta-13b")
    # a single-model server (llama.cpp) answers with what it loaded: a different name is a warning, not a stop
    one = models_server(["gemma3-270m"])
    monkeypatch.setenv("HUBLAB_LLM_BASE_URL", one.url)
    warnings = check_llm(load_pipeline(project / "pipelines/difar.yaml"))
    assert len(warnings) == 1 and "does not serve model beta-13b (it lists: gemma3-270m)" in warnings[0]


def test_dry_run_prints_the_thesis_estimate_only(project, shared):
    code, out, err, _ = hublab(*run_args(shared, "hublink", "--dry-run"))
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1
    # 44 reduced-GV1 questions x the thesis's 82,434 tokens (HubLink (T), final comparison) at o3-mini's $1.10/1M
    assert "44 questions × 82,434 tokens/question (thesis, HubLink (Traverse) on GV1)" in lines[0]
    assert "3,627,092 tokens on o3-mini" in lines[0] and "$3.99" in lines[0]
    assert not (project / "mlruns").exists() and not (project / "outputs").exists()
    code, out, _, _ = hublab(*run_args(shared, "hublink_fast", "--dry-run", "--limit", "10"))
    assert code == 0 and "10 questions × 28,386 tokens/question (thesis, HubLink (Fast) on GV1)" in out
    code, out, _, _ = hublab(*run_args(shared, "bm25", "--dry-run"))
    assert code == 0 and "LLM-free pipeline" in out
    code, out, _, _ = hublab(*run_args(shared, "hublink_llamacpp", "--dry-run", "--limit", "3"))
    assert code == 0 and "247,302 tokens on gemma3-270m (embedded llama.cpp), cost $0 (an in-process model)" in out


def test_dry_run_prefers_this_configurations_own_measurement(project, shared):
    """Once a run of the same configuration (config hash: pipeline, graph, dataset) logged its tokens per question,
    the estimate uses that instead of the thesis's figure."""
    from mlflow import MlflowClient

    from conftest import migrated_mlflow_store
    from hublab.pipeline.config import load_pipeline
    from hublab.tracking.mlflow_log import tracking_uri

    dataset = str(shared / "data/kgqa/reduced_deep_distributed.csv")
    (project / "mlruns").mkdir()
    shutil.copyfile(migrated_mlflow_store(), project / "mlruns" / "mlflow.db")
    client = MlflowClient(tracking_uri(project))
    chash = load_pipeline(project / "pipelines/difar.yaml").config_hash("gv1", dataset)
    other = client.create_run("0")  # another configuration's run: ignored
    client.log_param(other.info.run_id, "config_hash", "0" * 16)
    client.log_metric(other.info.run_id, "llm_tokens", 99.0)
    run = client.create_run("0")
    client.log_param(run.info.run_id, "config_hash", chash)
    client.log_metric(run.info.run_id, "llm_tokens", 1234.0)
    code, out, err, _ = hublab(*run_args(shared, "difar", "--dry-run", "--limit", "10"))
    assert code == 0, err
    assert "10 questions × 1,234 tokens/question (this configuration's last run) = 12,340 tokens on gpt-4o-mini" in out


def test_an_llm_nothing_calls_needs_no_key(project, shared):
    """DiFaR's retriever makes no LLM call: with its generation pipe off, the pipeline's ``openai`` LLM is never
    called, so the run needs no key and its estimate is LLM-free; with the pipe on (no LLM of its own) it is used."""
    from hublab.pipeline.config import load_pipeline
    from hublab.preflight import llm_endpoints

    cfg = yaml.safe_load((project / "pipelines/difar.yaml").read_text())
    cfg["generation"] = {"enabled": False}
    (project / "pipelines/difar_nogen.yaml").write_text(yaml.safe_dump(cfg))
    assert llm_endpoints(load_pipeline(project / "pipelines/difar_nogen.yaml")) == []
    assert [e.field for e in llm_endpoints(load_pipeline(project / "pipelines/difar.yaml"))] == ["llm"]
    assert [e.field for e in llm_endpoints(load_pipeline(project / "pipelines/hublink.yaml"))] == ["llm"]
    code, out, err, _ = hublab(*run_args(shared, "difar_nogen", "--dry-run"))
    assert code == 0 and "LLM-free pipeline" in out, (out, err)


def test_an_input_price_alone_bounds_the_cost():
    from hublab.llm.estimate import Estimate

    line = Estimate(10, 1000.0, "thesis", "my-model", (0.5, 0.0)).line()
    assert "cost ≈ $0.01" in line and "at most $0.01" in line and "no price" not in line
    assert "cost $0 (no price" in Estimate(10, 1000.0, "thesis", "my-model", (0.0, 0.0)).line()


def test_answer_metrics_on_a_file_without_golden_answers_are_announced(project, shared):
    """examples/my_questions.csv has no golden_answer column: a pipeline that scores BLEU/ROUGE against it says so
    before the run (the metrics would compare with an empty string)."""
    from hublab.config import settings
    from hublab.preflight import check_run

    cfg = yaml.safe_load((project / "pipelines/difar.yaml").read_text())
    cfg["evaluation"]["generation_metrics"] = ["bleu", "rouge"]
    (project / "pipelines/difar_bleu.yaml").write_text(yaml.safe_dump(cfg))
    mine = str(REPO / "examples/my_questions.csv")
    checked = check_run(project / "pipelines/difar_bleu.yaml", "gv3_orkg", mine, settings=settings(),
                        tracking=False)
    (w,) = [w for w in checked.warnings if "golden_answer" in w]
    assert "3 of 3 questions have no golden_answer (first: 'q1'); bleu, rouge score" in w
    reduced = str(shared / "data/kgqa/reduced_deep_distributed.csv")  # thesis rows carry their answers
    checked = check_run(project / "pipelines/difar_bleu.yaml", "gv1", reduced, settings=settings(), tracking=False)
    assert not [w for w in checked.warnings if "golden_answer" in w]
