"""The thesis's ``ofat_<retriever>_tuning_parameters*.json`` files (SQA ``config_name``/``parameter_name``/
``dict_key`` entries) translated to a search space over HubLab's dotted config paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hublab.errors import InputError
from hublab.tuning._space_base import MISSING, Factor, SearchSpace

# SQA pipe names (thesis configs) -> HubLab config sections.
_SQA_PIPES = {
    "retrieval_config": "retriever.params",
    "pre_retrieval_augmentation": "pre_retrieval",
    "post_retrieval_processing": "post_retrieval",
}


def _endpoint_value(sqa: dict[str, Any], *, llm: bool) -> dict[str, Any]:
    """An SQA llm_config/embedding_config -> a HubLab section for an OpenAI-compatible endpoint (Ollama via
    its /v1 URL); LLM sections also carry temperature and reasoning effort."""
    out: dict[str, Any] = {"backend": "openai", "model": sqa.get("name_model")}
    if str(sqa.get("endpoint", "OpenAI")).lower() == "ollama":
        out["base_url"] = "http://localhost:11434/v1"
    if llm and sqa.get("temperature", MISSING) is not MISSING:
        out["temperature"] = sqa.get("temperature")
    if llm and sqa.get("reasoning_effort"):
        out["reasoning_effort"] = sqa["reasoning_effort"]
    return out


def space_from_thesis_json(path: str | Path, *, key_map: dict[str, str] | None = None) -> SearchSpace:
    """Translate a thesis ``ofat_*_tuning_parameters*.json`` into a SearchSpace.

    ``key_map`` renames SQA ``additional_params`` keys to this retriever's parameter names.
    LLM and embedding factors become ``llm``/``embedder`` sections pointing at OpenAI-compatible
    endpoints; whether they can run here is decided by the caller (see ``applicable``).
    """
    path = Path(path)
    try:
        entries = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read tuning parameters: {exc}", file=str(path)) from exc
    if not isinstance(entries, list):
        raise InputError("expected a JSON list of parameter ranges", file=str(path))
    key_map = key_map or {}
    space = SearchSpace()
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or "values" not in e or "config_name" not in e or "parameter_name" not in e:
            raise InputError("expected {config_name, parameter_name, values[, dict_key]}", file=str(path), row=i)
        pipe, param, values = e["config_name"], e["parameter_name"], e["values"]
        if pipe not in _SQA_PIPES:
            raise InputError(f"unknown config_name {pipe!r}", file=str(path), row=i, field="config_name")
        if param == "llm_config":
            space.factors.append(Factor("llm", tuple(_endpoint_value(v, llm=True) for v in values), "LLM"))
        elif param == "additional_params" and e.get("dict_key") == "embedding_config":
            space.factors.append(Factor("embedder", tuple(_endpoint_value(v, llm=False) for v in values), "Embedding"))
        elif param == "additional_params":
            key = str(e.get("dict_key"))
            space.factors.append(Factor(f"{_SQA_PIPES[pipe]}.{key_map.get(key, key)}", tuple(values), key))
        elif param == "enabled":
            label = "Do Question Augmentation" if pipe == "pre_retrieval_augmentation" else "Do Reranking"
            space.factors.append(Factor(f"{_SQA_PIPES[pipe]}.enabled", tuple(values), label))
        else:
            raise InputError(f"unsupported parameter_name {param!r}", file=str(path), row=i, field="parameter_name")
    return space
