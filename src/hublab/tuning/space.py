"""Search spaces: factors addressed by dotted paths into the pipeline config.

Two sources: the ``search_space`` section of a pipeline YAML and the thesis's
``ofat_<retriever>_tuning_parameters*.json`` files (SQA ``config_name``/``parameter_name``/``dict_key``
entries), which are translated to the same dotted paths.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hublab.errors import InputError

_MISSING = object()

# SQA pipe names (thesis configs) -> HubLab config sections.
_SQA_PIPES = {
    "retrieval_config": "retriever.params",
    "pre_retrieval_augmentation": "pre_retrieval",
    "post_retrieval_processing": "post_retrieval",
}


@dataclass(frozen=True)
class Factor:
    """One OFAT factor: a config path and the values it takes (JSON-serialisable)."""

    path: str
    values: tuple[Any, ...]
    label: str = ""
    notes: str = ""

    @property
    def name(self) -> str:
        return self.label or self.path.rsplit(".", 1)[-1]

    def encoded(self) -> list[str]:
        """Values as stable strings (Optuna categorical choices must be primitives)."""
        return [encode_value(v) for v in self.values]


@dataclass
class SearchSpace:
    factors: list[Factor] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (factor, why) not applicable here

    def by_path(self) -> dict[str, Factor]:
        return {f.path: f for f in self.factors}


def encode_value(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def decode_value(text: str) -> Any:
    return json.loads(text)


def get_path(cfg: dict[str, Any], path: str, default: Any = _MISSING) -> Any:
    node: Any = cfg
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            if default is _MISSING:
                raise KeyError(path)
            return default
        node = node[part]
    return node


def set_path(cfg: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Return a deep copy of ``cfg`` with ``path`` set (intermediate dicts created)."""
    out = copy.deepcopy(cfg)
    node = out
    parts = path.split(".")
    for part in parts[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            node[part] = nxt
        node = nxt
    node[parts[-1]] = copy.deepcopy(value)
    return out


def space_from_pipeline(section: dict[str, Any] | None, *, source: str = "search_space") -> SearchSpace:
    """Parse ``search_space: {<dotted.path>: {values: [...], label: ...}}`` (or a bare list of values)."""
    space = SearchSpace()
    for path, spec in (section or {}).items():
        if isinstance(spec, list):
            spec = {"values": spec}
        if not isinstance(spec, dict) or not isinstance(spec.get("values"), list) or not spec["values"]:
            raise InputError("expected {values: [non-empty list]}", file=source, field=f"search_space.{path}")
        space.factors.append(Factor(str(path), tuple(spec["values"]), str(spec.get("label", "")),
                                    str(spec.get("notes", ""))))
    return space


def _endpoint_value(sqa: dict[str, Any], *, llm: bool) -> dict[str, Any]:
    """An SQA llm_config/embedding_config -> a HubLab section for an OpenAI-compatible endpoint (Ollama via
    its /v1 URL); LLM sections also carry temperature and reasoning effort."""
    out: dict[str, Any] = {"backend": "openai", "model": sqa.get("name_model")}
    if str(sqa.get("endpoint", "OpenAI")).lower() == "ollama":
        out["base_url"] = "http://localhost:11434/v1"
    if llm and sqa.get("temperature", _MISSING) is not _MISSING:
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


def applicable(space: SearchSpace, base_cfg: dict[str, Any]) -> SearchSpace:
    """Drop factors that need an external LLM/embedding service when the base config is LLM-free.

    Reported in ``skipped`` so the study says what was left out and why, instead of silently
    running configs that would fail or measure nothing.
    """
    llm_free = str(get_path(base_cfg, "llm.backend", "none")) == "none"
    out = SearchSpace(skipped=list(space.skipped))
    for f in space.factors:
        if llm_free and f.path in ("llm", "embedder") and any(
            isinstance(v, dict) and v.get("backend") == "openai" for v in f.values
        ):
            out.skipped.append((f.name, "needs an external OpenAI-compatible endpoint; base config is LLM-free"))
            continue
        if llm_free and f.path in ("pre_retrieval.enabled", "post_retrieval.enabled") and True in f.values:
            out.skipped.append((f.name, "LLM-based pipe; base config is LLM-free"))
            continue
        out.factors.append(f)
    return out
