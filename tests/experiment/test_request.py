"""RunRequest: what a run is, and what it resolves once from the settings and the environment."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hublab.config import Settings, project_tracking_uri
from hublab.experiment.request import RunRequest
from hublab.experiment.runner import run_experiment
from hublab.pipeline.config import PipelineConfig


def _cfg() -> PipelineConfig:
    return PipelineConfig.from_dict({"name": "bm", "retriever": {"type": "bm25", "params": {}},
                                     "llm": {"backend": "openai", "model": "m", "api_key_env": "MY_RUN_KEY"}})


def test_the_request_resolves_experiment_uri_secrets_and_name_once(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("MY_RUN_KEY", "sk-not-a-real-key-123")
    st = Settings(tmp_path, {"tracking": {"experiment": "from-params"}})
    req = RunRequest(_cfg(), "gv3_orkg", "gv3_orkg", st, limit=3)
    assert req.experiment_name == "from-params"
    assert replace(req, experiment="mine").experiment_name == "mine"
    assert req.tracking_uri == project_tracking_uri(tmp_path)
    assert "sk-not-a-real-key-123" in req.secrets  # the variable the config names in api_key_env
    assert req.flat_config["llm.api_key_env"] == "MY_RUN_KEY"
    assert req.config_hash == _cfg().config_hash("gv3_orkg", "gv3_orkg")
    assert req.display_name() == "bm·gv3_orkg·gv3_orkg"
    assert replace(req, run_name="trial-3").display_name("3 of 6 questions") == "trial-3 [3 of 6 questions]"
    monkeypatch.setenv("MY_RUN_KEY", "sk-changed-later-456")
    assert req.secrets == [s for s in req.secrets if s != "sk-changed-later-456"]  # resolved once, not re-read


def test_a_request_is_frozen_and_passed_whole(tmp_path: Path):
    req = RunRequest(_cfg(), "gv3_orkg", "gv3_orkg", Settings(tmp_path, {}))
    with pytest.raises(AttributeError):
        req.limit = 5  # type: ignore[misc]
    with pytest.raises(TypeError, match="takes everything from the RunRequest"):
        run_experiment(req, limit=5)
    with pytest.raises(TypeError, match="needs the graph and the dataset"), pytest.warns(DeprecationWarning):
        run_experiment(_cfg(), "gv3_orkg")


def test_the_legacy_call_form_warns_and_runs_the_request_it_builds(tmp_path: Path, monkeypatch):
    """``run_experiment(cfg, graph, dataset, **options)`` still runs, the same request ``RunRequest.build`` makes,
    and says so at the caller's line."""
    from hublab.experiment import runner

    ran: list[RunRequest] = []
    monkeypatch.setattr(runner, "_run", lambda req, on_question: ran.append(req))
    st = Settings(tmp_path, {})
    with pytest.warns(DeprecationWarning, match=r"RunRequest\.build\(cfg, graph, dataset") as caught:
        run_experiment(_cfg(), "gv3_orkg", "gv3_orkg", settings=st, limit=2)
    assert caught[0].filename == __file__
    assert ran == [RunRequest.build(_cfg(), "gv3_orkg", "gv3_orkg", settings=st, limit=2)]
