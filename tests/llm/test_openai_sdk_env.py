"""The OpenAI SDK's own variables (issue #30 item 4): a pipeline whose ``base_url`` is null goes where
``OPENAI_BASE_URL`` points (a proxy, a gateway, a local server) in the preflight, the estimate and the run, with
``OPENAI_API_KEY`` / ``OPENAI_ORG_ID`` / ``OPENAI_PROJECT_ID`` sent as the SDK sends them; the pipeline's own
``base_url`` and ``--llm-base-url`` / ``HUBLAB_LLM_BASE_URL`` still win, and the key is never printed or stored."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from support.llm_servers import ModelsServer, closed_port_url

REPO = Path(__file__).resolve().parents[2]
SDK_VARS = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")
KEY = "sk-proj-test0000secret0000key0000value"


@pytest.fixture(autouse=True)
def _no_sdk_env(monkeypatch):
    for var in SDK_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture()
def project(tmp_path, shared, monkeypatch) -> Path:
    from conftest import shared_params_project

    shared_params_project(tmp_path, shared, monkeypatch)
    shutil.copytree(REPO / "pipelines", tmp_path / "pipelines")
    return tmp_path


def test_openai_base_url_fills_a_null_base_url_and_explicit_values_win(monkeypatch):
    from hublab.errors import InputError
    from hublab.llm.factory import env_endpoint_override

    cfg = {"backend": "openai", "model": "o3-mini", "base_url": None, "api_key_env": "OPENAI_API_KEY"}
    assert env_endpoint_override(cfg) == cfg  # nothing set: OpenAI's API, as before
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    out = env_endpoint_override(cfg)
    assert out["base_url"] == "http://127.0.0.1:9/v1" and out["api_key_env"] == "OPENAI_API_KEY"
    assert cfg["base_url"] is None  # the input is not changed
    bare = env_endpoint_override({"backend": "openai", "model": "gpt-4o"})
    assert bare["base_url"] == "http://127.0.0.1:9/v1" and bare["api_key_env"] == "OPENAI_API_KEY"  # SDK default
    own = {**cfg, "base_url": "http://10.0.0.1:8000/v1"}
    assert env_endpoint_override(own)["base_url"] == "http://10.0.0.1:8000/v1"  # the pipeline's own value wins
    monkeypatch.setenv("HUBLAB_LLM_BASE_URL", "http://127.0.0.1:7/v1")
    assert env_endpoint_override(cfg)["base_url"] == "http://127.0.0.1:7/v1"  # HubLab's override wins
    assert env_endpoint_override(cfg)["api_key_env"] is None  # ... and gets no OpenAI key, as before
    monkeypatch.delenv("HUBLAB_LLM_BASE_URL")
    assert env_endpoint_override({"backend": "none"}) == {"backend": "none"}  # LLM-free stays LLM-free
    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:pw@127.0.0.1:9/v1")
    with pytest.raises(InputError, match=r"a URL with credentials .*\(value not shown\)") as err:
        env_endpoint_override(cfg)
    assert "pw@" not in str(err.value) and "OPENAI_BASE_URL" in str(err.value)


def test_the_preflight_checks_openai_base_url_with_the_sdk_headers(project, monkeypatch):
    """Only ``OPENAI_BASE_URL`` (plus the SDK's key, organization and project) set: the check asks that server,
    not api.openai.com, with the headers the client will send."""
    from hublab.pipeline.config import load_pipeline
    from hublab.preflight import check_llm, llm_endpoints

    srv = ModelsServer(["gpt-4o-mini"])
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_ORG_ID", "org-hublab")
        monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_hublab")
        cfg = load_pipeline(project / "pipelines/difar.yaml")
        assert [(e.base_url, e.key_env) for e in llm_endpoints(cfg)] == [(srv.url, "OPENAI_API_KEY")]
        assert check_llm(cfg) == []
        (sent,) = srv.headers
        assert sent["authorization"] == f"Bearer {KEY}"
        assert sent["openai-organization"] == "org-hublab" and sent["openai-project"] == "proj_hublab"
    finally:
        srv.close()


def test_run_checks_openai_base_url_instead_of_api_openai_com(project, shared):
    """Nothing listens at ``OPENAI_BASE_URL``: the run stops on that address, not on a missing OpenAI key."""
    from conftest import invoke_cli

    url = closed_port_url()
    code, out, err = invoke_cli(["run", "pipelines/difar.yaml", "--graph", "gv1", "--dataset",
                                 str(shared / "data/kgqa/reduced_deep_distributed.csv"), "--no-carbon"],
                                env={"OPENAI_BASE_URL": url})
    assert code == 2, (out, err)
    host = url.split("//")[1].split("/")[0]
    assert f"nothing answers at {host}" in err and "api.openai.com" not in err and "needs an API key" not in err


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_openai_base_url_alone_points_an_llm_pipeline_at_a_local_server(tmp_path, shared, gv3_orkg_graph,
                                                                        fault_server, monkeypatch):
    """BM25 with the generation pipe on ``backend: openai`` and ``base_url: null``: with only ``OPENAI_BASE_URL``
    set the run passes its preflight and every request reaches that server; with ``OPENAI_API_KEY`` set too the key
    goes to that server (as the SDK sends it) and is never printed nor written into the project."""
    from conftest import invoke_cli, small_gv3_project

    def project(name: str) -> Path:  # the LLM object is cached per config and cache folder: a fresh project each
        root = small_gv3_project(tmp_path / name, shared, gv3_orkg_graph, monkeypatch, n_questions=2)
        monkeypatch.chdir(root)
        pipe = yaml.safe_load((REPO / "pipelines/bm25.yaml").read_text())
        pipe.update(name="bm25_gen", generation={"enabled": True, "llm": None},
                    llm={"backend": "openai", "model": "gpt-4o-mini", "base_url": None,
                         "api_key_env": "OPENAI_API_KEY", "temperature": 0.0, "max_retries": 0, "timeout_s": 10})
        pipe.pop("search_space")
        (root / "pipelines").mkdir()
        (root / "pipelines/bm25_gen.yaml").write_text(yaml.safe_dump(pipe))
        return root

    args = ["run", "pipelines/bm25_gen.yaml", "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--no-carbon",
            "--no-trace"]
    monkeypatch.setenv("OPENAI_BASE_URL", fault_server.base_url)
    project("plain")
    code, out, err = invoke_cli(args)
    assert code == 0, (out[-2000:], err[-2000:])
    assert "api.openai.com" not in out + err
    assert len(fault_server.requests) == 2  # one generation call per question, at the OPENAI_BASE_URL server
    assert fault_server.headers[0]["authorization"] == "Bearer not-needed"  # no key set: none sent
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    root = project("keyed")
    code, out, err = invoke_cli(args)
    assert code == 0, (out[-2000:], err[-2000:])
    assert len(fault_server.requests) == 4 and fault_server.headers[-1]["authorization"] == f"Bearer {KEY}"
    assert KEY not in out + err
    leaked = [p for p in root.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []
