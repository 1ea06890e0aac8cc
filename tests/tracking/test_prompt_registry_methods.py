"""The baselines' prompt templates in the MLflow Prompt Registry (HubLink's are covered by a real llama.cpp run in
test_traces.py): every ``*_PROMPT`` a baseline's code can send is registered, its registry text renders to the
code's text, a run is linked to those versions, and a second run reuses them (no new version without a change)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow  # whole runs with MLflow's prompt registry

#: the LLM configurations of the baselines that send prompts (DiFaR is dense retrieval only)
METHODS = ["fidelis", "mindmap", "structgpt", "tog", "four_step_focus"]


def _code_prompts(retriever_type: str) -> dict[str, str]:
    """Every ``*_PROMPT`` string constant of the method's module or package, read independently of the registry."""
    mod = importlib.import_module(f"hublab.retrievers.methods.{retriever_type}")
    mods = [mod]
    if hasattr(mod, "__path__"):
        mods += [importlib.import_module(f"{mod.__name__}.{m.name}") for m in pkgutil.iter_modules(mod.__path__)]
    return {f"{retriever_type}_{a[:-7].lower()}": v for m in mods for a, v in vars(m).items()
            if a.endswith("_PROMPT") and isinstance(v, str)}


@pytest.mark.parametrize("method", METHODS)
def test_baseline_prompts_are_registered_linked_and_reused(tmp_path: Path, method: str):
    import mlflow
    from mlflow import MlflowClient

    from hublab.pipeline.config import load_pipeline
    from hublab.tracking.prompt_registry import prompts_used, register_and_link, to_mlflow_template

    cfg = load_pipeline(ROOT / "pipelines" / f"{method}.yaml")
    assert cfg.llm.get("backend") not in (None, "none"), "the LLM configuration of the method"
    code = _code_prompts(cfg.retriever_type)
    assert code and set(code) <= set(prompts_used(cfg))

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    client = MlflowClient()
    exp = client.create_experiment("prompts")
    first, second = (client.create_run(exp).info.run_id for _ in range(2))
    refs = register_and_link(cfg, first, lock_dir=tmp_path)
    assert set(code) <= set(refs)
    tags = client.get_run(first).data.tags
    assert "mlflow.linkedPrompts" in tags
    for name, text in code.items():
        pname, version = refs[name].split("/")
        assert tags[f"prompt.{name}"] == refs[name]
        assert pname in tags["mlflow.linkedPrompts"]
        assert client.get_prompt_version(pname, version).template == to_mlflow_template(text)
    assert register_and_link(cfg, second, lock_dir=tmp_path) == refs  # same text: same versions
