"""Search spaces: factors addressed by dotted paths into the pipeline config.

Two sources: the ``search_space`` (and ``shape_space``) section of a pipeline YAML and the thesis's
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
    """One factor: a config path and the values it takes (JSON-serialisable).

    ``values`` is the OFAT grid (and, for TPE/NSGA-II, the choices or the range they span). ``low``/``high``
    (with ``step``/``log``) declare a numeric range for TPE/NSGA-II explicitly; ``kind`` forces the Optuna
    distribution (``int``, ``float``, ``categorical``) instead of inferring it from the values.
    """

    path: str
    values: tuple[Any, ...]
    label: str = ""
    notes: str = ""
    low: float | None = None
    high: float | None = None
    step: float | None = None
    log: bool = False
    kind: str = ""

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


def space_record(space: SearchSpace) -> dict[str, dict[str, Any]]:
    """The space as a study records it (JSON, factor path -> its values and range): what a joining worker or a
    resume must match, so that one study never mixes trials drawn from two spaces."""
    return {f.path: {"values": [encode_value(v) for v in f.values], "low": f.low, "high": f.high, "step": f.step,
                     "log": f.log, "kind": f.kind} for f in sorted(space.factors, key=lambda f: f.path)}


def encode_value(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def same_value(a: Any, b: Any) -> bool:
    """Equal as parameter values: numbers by value (a YAML ``5`` and a config's ``5.0`` are one grid point, not a
    base row plus a duplicate trial), everything else by its JSON encoding (``True`` is not ``1``)."""
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) and not isinstance(b, bool):
        return a == b
    return encode_value(a) == encode_value(b)


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


_KINDS = ("", "int", "float", "categorical")
_MAX_RANGE_GRID = 50


def _range_values(low: float, high: float, step: float | None) -> tuple[Any, ...]:
    """The OFAT grid of an integer range given without ``values``; empty (TPE/NSGA-II only) when the range is
    continuous or too large to try one by one."""
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (low, high, step or 1)):
        return ()
    grid = tuple(range(int(low), int(high) + 1, int(step or 1)))
    return grid if len(grid) <= _MAX_RANGE_GRID else ()


def require_grid(space: SearchSpace, *, source: str) -> None:
    """OFAT tries listed values one by one: a continuous or large range needs them listed."""
    for f in space.factors:
        if not f.values:
            raise InputError("a float or large range needs explicit values for OFAT; add values: [...]",
                             file=source, field=f"search_space.{f.path}")


#: The pipeline sections that hold factors: ``search_space`` (what every study tunes) and ``shape_space`` (the
#: factors whose best value depends on the graph's shape, tuned only when the graph is not the thesis's).
SPACE_KEYS = ("search_space", "shape_space")


def space_from_pipeline(section: dict[str, Any] | None, *, source: str = "search_space",
                        key: str = "search_space") -> SearchSpace:
    """Parse ``search_space: {<dotted.path>: spec}`` (or the ``shape_space`` section, named by ``key`` in errors).

    ``spec`` is a bare list of values, ``{values: [...], label: ..., kind: int|float|categorical}`` or a numeric
    range ``{low: 0, high: 9, step: 1, log: false}`` (optionally with ``values`` for the OFAT grid).
    """
    space = SearchSpace()
    for path, spec in (section or {}).items():
        field_ = f"{key}.{path}"
        if isinstance(spec, list):
            spec = {"values": spec}
        if not isinstance(spec, dict):
            raise InputError("expected {values: [...]} or {low: .., high: ..}", file=source, field=field_)
        kind = str(spec.get("kind", ""))
        if kind not in _KINDS:
            raise InputError(f"kind must be one of int, float, categorical (got {kind!r})", file=source,
                             field=f"{field_}.kind")
        low, high, step = spec.get("low"), spec.get("high"), spec.get("step")
        if (low is None) != (high is None):
            raise InputError("a range needs both low and high", file=source, field=field_)
        if low is not None:
            nums = [x for x in (low, high, step) if x is not None]
            if any(isinstance(x, bool) or not isinstance(x, int | float) for x in nums) or low > high:
                raise InputError("expected numbers with low <= high", file=source, field=field_)
        values = spec.get("values")
        if values is None and low is not None:
            values = list(_range_values(low, high, step))
        if not isinstance(values, list) or (not values and low is None):
            raise InputError("expected {values: [non-empty list]}", file=source, field=field_)
        space.factors.append(Factor(str(path), tuple(values), str(spec.get("label", "")), str(spec.get("notes", "")),
                                    low=low, high=high, step=step, log=bool(spec.get("log", False)), kind=kind))
    return space


# ---------------------------------------------------------------- Optuna distributions


def _is_primitive(v: Any) -> bool:
    return v is None or isinstance(v, bool | int | float | str)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


@dataclass(frozen=True)
class Param:
    """How a factor appears in Optuna: its distribution, and how config values map to parameter values
    (identity, except lists/dicts such as LLM configs, which are categorical JSON strings)."""

    path: str
    distribution: Any  # optuna.distributions.BaseDistribution
    encoded: bool = False

    def to_param(self, value: Any) -> Any:
        if self.encoded:
            return encode_value(value)
        if isinstance(value, bool) or not _is_number(value):
            return value
        from optuna.distributions import IntDistribution

        return int(value) if isinstance(self.distribution, IntDistribution) else float(value)

    def to_value(self, param: Any) -> Any:
        if self.encoded and isinstance(param, str):
            return decode_value(param)
        return param

    def suggest(self, trial: Any) -> Any:
        """``trial.suggest_*`` with this distribution (a fixed/enqueued value is returned as is)."""
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        d = self.distribution
        if isinstance(d, IntDistribution):
            return trial.suggest_int(self.path, d.low, d.high, step=d.step, log=d.log)
        if isinstance(d, FloatDistribution):
            return trial.suggest_float(self.path, d.low, d.high, step=d.step, log=d.log)
        assert isinstance(d, CategoricalDistribution)
        return trial.suggest_categorical(self.path, d.choices)


def _gcd_step(values: list[int]) -> int:
    import math

    lo = min(values)
    g = 0
    for v in values:
        g = math.gcd(g, v - lo)
    return g or 1


def optuna_param(f: Factor, base: Any) -> Param:
    """The Optuna distribution of a factor.

    * an explicit range (``low``/``high``) → ``IntDistribution``/``FloatDistribution`` with its step/log;
    * all listed values (and the base value) integers → ``IntDistribution`` over their span, step = the
      largest step that hits every value (10, 20, 30 → step 10);
    * numbers → ``FloatDistribution`` over their span; booleans/strings/None → ``CategoricalDistribution``
      of the native values; lists/dicts → categorical over their JSON encodings.
    ``kind: categorical`` keeps a numeric list categorical (TPE then only tries the listed values).
    """
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    values = list(f.values) + ([] if base is None else [base])
    if f.kind != "categorical" and (f.low is not None or all(_is_number(v) for v in values)):
        nums = [v for v in values if _is_number(v)]
        if len(nums) != len(values):
            raise InputError(f"factor {f.path}: numeric range but non-numeric values {values!r}", field=f.path)
        lo = min([*nums, *([f.low] if f.low is not None else [])])
        hi = max([*nums, *([f.high] if f.high is not None else [])])
        ints = all(_is_int(v) for v in [*nums, lo, hi]) and (f.step is None or _is_int(f.step))
        if f.kind == "int" and not ints:
            raise InputError(f"factor {f.path}: kind int but non-integer values {values!r}", field=f.path)
        if ints and f.kind != "float":
            if f.log:
                return Param(f.path, IntDistribution(int(lo), int(hi), log=True))
            step = int(f.step) if f.step is not None else (_gcd_step([int(v) for v in nums]) if nums else 1)
            if any((int(v) - int(lo)) % step for v in nums) or (int(hi) - int(lo)) % step:
                step = _gcd_step([int(v) for v in [*nums, lo, hi]])
            return Param(f.path, IntDistribution(int(lo), int(hi), step=step))
        return Param(f.path, FloatDistribution(float(lo), float(hi), log=f.log,
                                               step=None if f.log or f.step is None else float(f.step)))
    if f.kind in ("int", "float"):
        raise InputError(f"factor {f.path}: kind {f.kind} needs numeric values", field=f.path)
    encoded = not all(_is_primitive(v) for v in values)
    choices: list[Any] = []
    for v in values:
        c = encode_value(v) if encoded else v
        if c not in choices:
            choices.append(c)
    return Param(f.path, CategoricalDistribution(choices), encoded)


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


def check_space(space: SearchSpace, base_cfg: dict[str, Any], *, source: str, key: str = "search_space") -> None:
    """Refuse a search space that cannot run, before any trial: no factor at all, a factor that is not one of the
    retriever's declared parameters (or an existing config path), a range whose ends or values the retriever's
    parameter types refuse. Each error is one line naming the file and ``<key>.<path>`` (``search_space`` or
    ``shape_space``)."""
    from hublab.retrievers.registry import get_retriever_class

    if not space.factors:
        raise InputError(f"no tunable parameter: add a {key} section with at least one factor",
                         file=source, field=key)
    retriever = str(get_path(base_cfg, "retriever.type", ""))
    klass = get_retriever_class(retriever)
    declared = klass.declared_params()
    for f in space.factors:
        field_ = f"{key}.{f.path}"
        if f.path.startswith("retriever.params."):
            key = f.path.removeprefix("retriever.params.")
            if key not in declared:
                raise InputError(f"unknown parameter {key!r} for retriever {retriever!r}; valid: "
                                 f"{', '.join(sorted(declared))}", file=source, field=field_)
            samples = [*f.values, *([f.low, f.high] if f.low is not None else [])]
            for v in samples:
                try:
                    klass.validate_params({key: v}, source=source)
                except InputError as exc:
                    raise InputError(f"value {v!r} refused: {exc.detail}", file=source, field=field_) from None
            if f.low is not None and f.low == f.high:
                raise InputError(f"empty range: low == high == {f.low!r}", file=source, field=field_)
        elif get_path(base_cfg, f.path, _MISSING) is _MISSING:
            raise InputError("unknown config path (not in the pipeline); retriever parameters are "
                             "retriever.params.<name>", file=source, field=field_)


def check_shape_space(search_space: dict[str, Any] | None, shape_space: dict[str, Any] | None,
                      base_cfg: dict[str, Any], *, source: str) -> SearchSpace:
    """Check a pipeline's ``shape_space`` as its ``search_space`` is checked (an empty one is allowed: a method may
    have no shape-dependent factor beyond its search space), and refuse a factor in both sections: a study over
    the two together would draw it twice. Returns the applicable shape factors."""
    shape = applicable(space_from_pipeline(shape_space, source=source, key="shape_space"), base_cfg)
    if shape.factors:
        check_space(shape, base_cfg, source=source, key="shape_space")
    searched = {str(p) for p in (search_space or {})}
    for f in shape.factors:
        if f.path in searched:
            raise InputError("already in search_space: a factor belongs to one of the two sections", file=source,
                             field=f"shape_space.{f.path}")
    return shape


def pipeline_space(search_space: dict[str, Any] | None, shape_space: dict[str, Any] | None,
                   base_cfg: dict[str, Any], *, source: str, shape: bool) -> SearchSpace:
    """A pipeline's checked, applicable factors: its ``search_space``, and with ``shape`` its ``shape_space`` too
    (a comparison on a user's graph). Each section is checked under its own name; the shape section is checked
    either way, so a bad one never waits for the first comparison to surface."""
    space = applicable(space_from_pipeline(search_space, source=source), base_cfg)
    if space.factors:
        check_space(space, base_cfg, source=source)
    extra = check_shape_space(search_space, shape_space, base_cfg, source=source)
    if shape:
        space = SearchSpace(space.factors + extra.factors, space.skipped + extra.skipped)
    if not space.factors:
        check_space(space, base_cfg, source=source)  # refuses an empty space in its one line
    return space
