"""Pipeline configuration (``pipelines/*.yaml``; schema in docs/pipeline-config.md).

Kept as plain dataclasses over dicts so Optuna/OFAT can override any dotted path and the runner can
hash and flatten it for MLflow. Unknown keys are errors naming the file and key path.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hublab.errors import InputError
from hublab.redact import SECRET_HINTS as SECRET_HINTS  # keys holding secrets: never stored, only *_env names
from hublab.redact import looks_secret as looks_secret

_TOP_KEYS = {"name", "description", "retriever", "llm", "embedder", "vector_store", "pre_retrieval",
             "post_retrieval", "generation", "evaluation", "search_space", "shape_space", "tuned"}
_PIPE_KEYS = {
    "pre_retrieval": {"enabled", "technique", "llm"},
    "post_retrieval": {"enabled", "technique", "llm", "top_k"},
    "generation": {"enabled", "llm"},
}
_EVAL_KEYS = {"k", "generation_metrics", "bertscore_model", "bertscore_layers", "judge_llm", "ragas_llm",
              # degradation budgets (experiment/runner.py): seconds per question / per run, and the share of
              # failed questions (errors + degraded) above which a run ends FAILED with a non-zero exit
              "question_timeout_s", "run_timeout_s", "max_failure_share"}


def find_secret_keys(data: Any, prefix: str = "") -> list[str]:
    """Dotted paths of every key that looks like a secret, at any depth (dicts inside lists included)."""
    found: list[str] = []
    if isinstance(data, dict):
        for k, v in data.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            if looks_secret(str(k)) and v not in (None, ""):
                found.append(path)
            found.extend(find_secret_keys(v, path))
    elif isinstance(data, list | tuple):
        for i, v in enumerate(data):
            found.extend(find_secret_keys(v, f"{prefix}[{i}]"))
    return found


@dataclass
class PipelineConfig:
    name: str
    retriever_type: str
    retriever_params: dict[str, Any] = field(default_factory=dict)
    llm: dict[str, Any] = field(default_factory=lambda: {"backend": "none"})
    embedder: dict[str, Any] = field(default_factory=dict)
    vector_store: dict[str, Any] = field(default_factory=dict)
    pre_retrieval: dict[str, Any] = field(default_factory=lambda: {"enabled": False})
    post_retrieval: dict[str, Any] = field(default_factory=lambda: {"enabled": False})
    generation: dict[str, Any] = field(default_factory=lambda: {"enabled": False})
    evaluation: dict[str, Any] = field(default_factory=lambda: {"k": 10, "generation_metrics": []})
    search_space: dict[str, Any] = field(default_factory=dict)
    #: the factors whose best value depends on the graph's shape (same format as ``search_space``): tuned with the
    #: search space when a method is compared on a user's graph, left at their thesis values on the thesis's graphs;
    #: like the search space, not part of the config hash
    shape_space: dict[str, Any] = field(default_factory=dict)
    #: provenance of a tuned pipeline (pipelines/tuned/*.yaml: study, budget, date); not part of the config hash
    tuned: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    source: str | None = None

    # ---- construction ----
    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "<config>",
                  lines: dict[str, int] | None = None) -> PipelineConfig:
        """Validate everything (strict types, ranges, known names, no credentials) and report every problem at
        once (``InputErrors``), each located by file, line (when read from YAML) and field."""
        from hublab.errors import raise_all
        from hublab.pipeline.validate import Problems, check_config, check_secret_values

        if not isinstance(data, dict):
            raise InputError("expected a mapping at top level", file=source)
        problems = Problems(source, lines)
        secrets = find_secret_keys(data)
        for path in secrets:
            problems.add(path, "secrets must not be in config files; name an environment variable instead "
                               f"(e.g. {path.rsplit('.', 1)[-1]}_env: MY_VAR)")
        unknown = set(data) - _TOP_KEYS
        if unknown:
            problems.add(None, f"unknown keys {sorted(unknown, key=str)}; expected some of {sorted(_TOP_KEYS)}")
        retr = data.get("retriever")
        params: Any = {}
        if not isinstance(retr, dict) or not isinstance(retr.get("type"), str):
            problems.add("retriever", "expected {type: <retriever name>, params: {...}}")
            retr = None
        else:
            extra = set(retr) - {"type", "params"}
            if extra:
                problems.add("retriever", f"unknown keys {sorted(extra, key=str)}")
            params = retr.get("params") or {}
            if not isinstance(params, dict):
                problems.add("retriever.params", "expected a mapping")
                params = None
        sections: dict[str, dict[str, Any]] = {}
        for key in ("llm", "embedder", "vector_store", "pre_retrieval", "post_retrieval", "generation",
                    "evaluation", "search_space", "shape_space"):
            val = data.get(key)
            if val is None:
                continue
            if not isinstance(val, dict):
                problems.add(key, "expected a mapping")
                continue
            allowed = _PIPE_KEYS.get(key) or (_EVAL_KEYS if key == "evaluation" else None)
            if allowed is not None and set(val) - allowed:
                problems.add(key, f"unknown keys {sorted(set(val) - allowed, key=str)}; expected {sorted(allowed)}")
            sections[key] = copy.deepcopy(val)
        check_secret_values(data, "", problems)  # every value, search space included; never echoed
        check_config({k: v for k, v in data.items() if k not in ("retriever", "search_space", "shape_space")},
                     problems)
        # a secret-named retriever parameter's value must not reach pydantic's "got ..." message
        if retr is not None and params is not None and not any(p.startswith("retriever") for p in secrets):
            from hublab.retrievers.registry import validate_retriever

            try:
                params = validate_retriever(retr["type"], params, source=source)
            except InputError as exc:
                problems.extend(getattr(exc, "errors", [exc]))
        raise_all(problems.errors)
        assert retr is not None and params is not None
        cfg = cls(name=str(data.get("name") or Path(source).stem), retriever_type=retr["type"],
                  retriever_params=copy.deepcopy(params), description=str(data.get("description", "")),
                  source=source)
        tuned = data.get("tuned")
        if tuned is not None and not isinstance(tuned, dict):
            raise InputError("expected a mapping", file=source, field="tuned")
        cfg.tuned = copy.deepcopy(tuned or {})
        for key, val in sections.items():
            if key in ("pre_retrieval", "post_retrieval", "generation", "evaluation"):
                merged = dict(getattr(cfg, key))
                merged.update(val)
                setattr(cfg, key, merged)
            else:
                setattr(cfg, key, val)
        cfg.apply_llm_endpoint_override()
        return cfg

    def apply_llm_endpoint_override(self) -> None:
        """Apply ``HUBLAB_LLM_BASE_URL`` / ``HUBLAB_LLM_MODEL`` (``--llm-base-url`` / ``--llm-model``) to every
        openai-backend LLM section here, so the endpoint is part of the config hash and the MLflow params: a
        run resumed against another endpoint never reuses the first endpoint's answers."""
        from hublab.llm.factory import env_endpoint_override

        self.llm = env_endpoint_override(self.llm)
        for pipe in ("pre_retrieval", "post_retrieval", "generation"):
            section = getattr(self, pipe)
            if section.get("llm"):
                section["llm"] = env_endpoint_override(section["llm"])
        for key in ("judge_llm", "ragas_llm"):
            if self.evaluation.get(key):
                self.evaluation[key] = env_endpoint_override(self.evaluation[key])
        from hublab.redact import secret_value_problem

        for var in ("HUBLAB_LLM_BASE_URL", "HUBLAB_LLM_MODEL", "HUBLAB_LLM_API_KEY_ENV"):
            why = secret_value_problem(os.environ.get(var) or "")
            if why:
                raise InputError(f"{why} (value not shown)", field=f"{var} (--llm-base-url / --llm-model)")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "retriever": {"type": self.retriever_type, "params": copy.deepcopy(self.retriever_params)},
            "llm": copy.deepcopy(self.llm),
            "embedder": copy.deepcopy(self.embedder),
            "vector_store": copy.deepcopy(self.vector_store),
            "pre_retrieval": copy.deepcopy(self.pre_retrieval),
            "post_retrieval": copy.deepcopy(self.post_retrieval),
            "generation": copy.deepcopy(self.generation),
            "evaluation": copy.deepcopy(self.evaluation),
        }

    # ---- identity ----
    def config_hash(self, *extra: Any) -> str:
        """Content hash of everything that changes results (name, search and shape space excluded). A non-bundled
        embedding model counts by its content (a model retrained at the same path is a different run)."""
        d = self.to_dict()
        d.pop("name")
        from hublab.embedding.factory import embedder_identity

        ident = embedder_identity(self.embedder)
        if ident:
            extra = (*extra, {"embedder_identity": ident})
        blob = json.dumps([d, *extra], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def retriever_uses_llm(self) -> bool:
        """Whether the retriever's own steps call the pipeline's LLM (its class's ``uses_llm``; an unknown retriever,
        reported by the config check, counts as calling)."""
        from hublab.retrievers.registry import get_retriever_class

        try:
            return bool(get_retriever_class(self.retriever_type).uses_llm)
        except Exception:  # noqa: BLE001
            return True

    def pipe_llm(self, pipe: str) -> dict[str, Any]:
        """The LLM config of a pipe: its own ``llm`` or the pipeline's top-level one."""
        own = getattr(self, pipe, {}).get("llm")
        return copy.deepcopy(own) if own else copy.deepcopy(self.llm)


def load_pipeline(path: str | Path) -> PipelineConfig:
    from hublab.yaml_strict import load_yaml

    path = Path(path)
    try:
        data, lines = load_yaml(path.read_text(encoding="utf-8"), source=str(path))
    except FileNotFoundError as exc:
        raise InputError("pipeline file not found", file=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=str(path)) from None
    except IsADirectoryError:
        raise InputError("expected a pipeline YAML file, got a directory", file=str(path)) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", file=str(path)) from exc
    except PermissionError:
        raise InputError("pipeline file is not readable (permission denied)", file=str(path)) from None
    return PipelineConfig.from_dict(data, source=str(path), lines=lines)


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dict → {"a.b.c": value} (lists JSON-encoded), for MLflow params."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        elif isinstance(v, list | tuple):
            out[key] = json.dumps(v, default=str)
        else:
            out[key] = v
    return out
