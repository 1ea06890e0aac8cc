"""Search spaces: factors addressed by dotted paths into the pipeline config.

Two sources: the ``search_space`` (and ``shape_space``) section of a pipeline YAML, parsed and checked here, and the
thesis's ``ofat_<retriever>_tuning_parameters*.json`` files (SQA ``config_name``/``parameter_name``/``dict_key``
entries), which are translated to the same dotted paths (``_space_thesis``). The factors and paths themselves live in
``_space_base``, their Optuna distributions in ``_space_optuna``; this module is the one the tuner imports them from.
"""

from __future__ import annotations

from typing import Any

from hublab.errors import InputError
from hublab.tuning._space_base import (
    MISSING,
    Factor,
    SearchSpace,
    decode_value,
    encode_value,
    get_path,
    same_value,
    set_path,
    space_record,
)
from hublab.tuning._space_optuna import Param, optuna_param
from hublab.tuning._space_thesis import space_from_thesis_json

__all__ = ["SPACE_KEYS", "Factor", "Param", "SearchSpace", "applicable", "check_shape_space", "check_space",
           "decode_value", "encode_value", "get_path", "optuna_param", "pipeline_space", "require_grid", "same_value",
           "set_path", "space_from_pipeline", "space_from_thesis_json", "space_record"]


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
        elif get_path(base_cfg, f.path, MISSING) is MISSING:
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
