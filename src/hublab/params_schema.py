"""``params.yaml`` checked against a schema before any command reads it: a key the schema does not
know (``trackng:``), a key given twice (YAML keeps the last one silently), or a value of the wrong type
(``paths.indices: [1, 2]``, ``tracking.experiment: 123``) is refused with the file, the line and the key, all
problems at once — instead of being ignored, or failing later far from its cause. Paths may use ``~`` and
``$VAR``/``${VAR}``: they are expanded; a variable that is not set is refused (an index built in a folder literally
named ``${HOME}`` was the alternative)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hublab.errors import InputError, raise_all
from hublab.yaml_strict import load_yaml

_VAR = re.compile(r"\$(\w+)|\$\{([^}]*)\}")
#: an absolute IRI as a predicate setting takes it (``http://…``, ``https://…``, ``urn:…``): a scheme, then no space
IRI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False)


class Paths(_Strict):
    shared: str | None = None
    orkg_export: str | None = None
    bibliography: str | None = None
    evidence: str | None = None
    kgqa_dir: str | None = None
    thesis_results: str | None = None
    snapshots: str | None = None
    graphs: str | None = None
    datasets: str | None = None
    indices: str | None = None
    mlruns: str | None = None
    cache: str | None = None


class Snapshot(_Strict):
    source: Literal["export", "api"] = "export"
    name: str | None = None
    research_field: str | None = None
    base_url: str | None = None
    page_size: int | None = None
    timeout_s: float | int | None = None
    retries: int | None = None
    contribution_pattern: str | None = None


class Graphs(_Strict):
    variants: list[str] | None = None
    research_field_id: str | None = None
    research_field_label: str | None = None


class Reduced(_Strict):
    name: str
    graph: str | None = None
    file: str


class Orkg(_Strict):
    name: str
    file: str


class Datasets(_Strict):
    files: dict[str, str] | None = None
    reduced: Reduced | None = None
    id_hints_graph: str | None = None
    orkg: Orkg | None = None
    min_mapping_rate: float | int | None = None


class Tracking(_Strict):
    experiment: str | None = None
    country_iso_code: str | None = None


class EvaluateRun(_Strict):
    pipeline: str
    retriever: str | None = None
    graph: str
    dataset: str
    reads: str | None = None


class IndexRun(_Strict):
    pipeline: str
    retriever: str | None = None
    graph: str


class Evaluate(_Strict):
    runs: list[EvaluateRun] = []


class Index(_Strict):
    runs: list[IndexRun] = []


class Train(_Strict):
    name: str | None = None
    base_model: str | None = None
    graphs: list[str] | None = None
    seed: int | None = None
    val_fraction: float | int | None = None
    phrasings_per_path: int | None = None
    triple_share: float | int | None = None
    false_drop: float | int | None = None
    max_train_pairs: int | None = None
    max_val_pairs: int | None = None
    batch_size: int | None = None
    max_steps: int | None = None
    learning_rate: float | int | None = None
    warmup_ratio: float | int | None = None
    max_seq_length: int | None = None
    device: str | None = None
    output_dir: str | None = None
    experiment: str | None = None
    register_: bool | None = Field(None, alias="register")  # the name pydantic's BaseModel has for itself


class Tune(_Strict):
    pipeline: str | None = None
    study: str | None = None
    mode: Literal["ofat", "tpe", "nsga2"] | None = None
    dataset: str | None = None
    n_trials: int | None = None


class Fair(_Strict):
    n_trials: int | None = None
    seed: int | None = None
    bound: int | None = None


class UserGraph(_Strict):
    source: str
    hub_types: list[str] = []


class Endpoint(_Strict):
    connect_timeout_s: float | int | None = Field(default=None, gt=0)
    read_timeout_s: float | int | None = Field(default=None, gt=0)
    answer_timeout_s: float | int | None = Field(default=None, gt=0)
    notice_after_s: float | int | None = Field(default=None, gt=0)
    retries: int | None = Field(default=None, ge=0)
    page_size: int | None = Field(default=None, gt=0)  # 0 would page forever
    max_answer_mb: float | int | None = Field(default=None, gt=0)
    max_expansion_ratio: float | int | None = Field(default=None, gt=0)


class ReadLimits(_Strict):
    max_expanded_mb: float | int | None = Field(default=None, gt=0)
    max_expansion_ratio: float | int | None = Field(default=None, gt=0)
    max_line_mb: float | int | None = Field(default=None, gt=0)


class GraphStore(_Strict):
    mode: Literal["auto", "memory", "disk"] | None = None
    above_mb: float | int | None = Field(default=None, ge=0)


class UserIndex(_Strict):
    pipeline: str
    retriever: str | None = None
    graph: str
    source: str


class UserRun(_Strict):
    pipeline: str
    graph: str
    source: str
    dataset: str
    reads: str | None = None


class UserCompare(_Strict):
    """One ``hublab compare`` of every LLM-free method on a declared graph (stage ``compare_user``)."""

    graph: str
    source: str
    dataset: str
    n_trials: int = Field(ge=1)  # dvc.yaml interpolates both: required
    pipelines: str  # comma-separated pipeline names, or ``all`` (every LLM-free method)


class UserGraphs(_Strict):
    label_predicates: list[str] | None = None
    type_predicates: list[str] | None = None
    endpoint: Endpoint | None = None
    limits: ReadLimits | None = None
    store: GraphStore | None = None
    graphs: dict[str, UserGraph] | None = None
    index: list[UserIndex] = []
    runs: list[UserRun] = []
    compare: list[UserCompare] = []

    @field_validator("type_predicates")
    @classmethod
    def _type_predicates_are_iris(cls, preds: list[str] | None) -> list[str] | None:
        """A type predicate that is no absolute IRI (``P31``, ``type``) would type nothing, silently: it is refused
        here, with the key's line."""
        bad = [p for p in preds or () if not IRI.match(p)]
        if bad:
            raise ValueError(f"expected predicate IRIs (http://…), got {bad[0]!r}")
        return preds


class Params(_Strict):
    paths: Paths | None = None
    snapshot: Snapshot | None = None
    graphs: Graphs | None = None
    datasets: Datasets | None = None
    tracking: Tracking | None = None
    evaluate: Evaluate | None = None
    index: Index | None = None
    train: Train | None = None
    tune: Tune | None = None
    fair: Fair | None = None
    user_graphs: UserGraphs | None = None

    @field_validator("paths")
    @classmethod
    def _no_unset_variables(cls, paths: Paths | None) -> Paths | None:
        for key, value in (paths.model_dump() if paths else {}).items():
            unset = [a or b for a, b in _VAR.findall(value or "") if (a or b) not in os.environ]
            if unset:
                raise ValueError(f"paths.{key} names the environment variable(s) {', '.join(unset)}, which are not "
                                 "set; set them, or write the path itself")
        return paths


def expand_paths(data: dict[str, Any]) -> dict[str, Any]:
    """``paths.*`` with ``~`` and environment variables expanded (checked set by :class:`Params`)."""
    paths = data.get("paths")
    if not isinstance(paths, dict):
        return data
    return {**data, "paths": {k: os.path.expanduser(os.path.expandvars(v)) if isinstance(v, str) else v
                              for k, v in paths.items()}}


def _problem(err: dict[str, Any], file: str, lines: dict[str, int]) -> InputError:
    loc = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in err["loc"]).replace(".[", "[")
    line = _line(loc, lines)
    if err["type"] == "extra_forbidden":
        section = loc.rsplit(".", 1)[0] if "." in loc else "the top level"
        msg = f"unknown key {loc.rsplit('.', 1)[-1]!r} in {section} (a typo? params.yaml's keys: docs/configuration.md)"
    else:
        got = err.get("input")
        shown = repr(got) if not isinstance(got, dict | list) or len(repr(got)) < 60 else type(got).__name__
        msg = f"{err['msg']} (got {shown})" if not str(err["msg"]).startswith("Value error") else err["msg"][13:]
    return InputError(msg, file=file, line=line, field=loc)


def _line(loc: str, lines: dict[str, int]) -> int | None:
    """The line of ``loc``, else of the nearest enclosing key, else of the first key inside the nearest enclosing
    item (a sequence item has no key of its own: a missing field is reported at its item's first line)."""
    parts = loc.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in lines:
            return lines[prefix]
        inside = [n for k, n in lines.items() if k.startswith(prefix + ".")]
        if inside:
            return min(inside)
    return None


def load_params(path: Path) -> dict[str, Any]:
    """``params.yaml`` read strictly (duplicate keys), checked against :class:`Params` (every problem at once) and
    with its paths expanded; ``{}`` when there is no file."""
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot be read ({exc})", file=str(path)) from None
    try:
        data, lines = load_yaml(text, source=str(path))
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - yaml's scanner and parser errors, all located by their mark
        raise InputError(f"invalid YAML: {exc}", file=str(path)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError("expected a mapping at top level", file=str(path))
    try:
        Params.model_validate(data)
    except ValidationError as exc:
        raise_all([_problem(e, str(path), lines) for e in exc.errors()])
    return expand_paths(data)
