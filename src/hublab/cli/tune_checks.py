"""What ``hublab tune`` and ``hublab tune-all`` refuse before any study, trial or MLflow experiment exists: an
objective no run logs, a storage URL whose driver is missing, a pipeline file that cannot be read in bounded time or
holds a value every trial would trip over, an MLflow store that cannot be reached or written (a study waited ~10
minutes on an unreachable server, silently, holding the mlruns lock every later study then waited on)."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from hublab.errors import InputError
from hublab.evaluation import names
from hublab.evaluation.generation import LLM_JUDGED, NON_LLM
from hublab.pipeline.config import load_pipeline
from hublab.preflight import bound_tracking_retries, config_value_problems, tracking_problem, yaml_file_problem

#: rank-cut and full-list metrics at any cut-off and level (``hit_at_10_triples``, ``recall_entities``)
_RETRIEVAL_METRIC = re.compile(r"(?:hit|map|mrr|precision|recall|f1|f2|exact_match)(?:_at_\d+)?_(?:triples|entities)")


def objective_problem(name: str) -> str | None:
    """Why ``name`` cannot be a study objective (None if it can): every objective must be a metric a run logs
    (hublab.evaluation.names), or the study fails after its first trial with every run FAILED."""
    from hublab.tuning.study_spec import MINIMIZE  # local: imports optuna (~0.2 s), every command would pay it

    known = {*names.HEADLINE, *names.retrieval_names(), *MINIMIZE, *NON_LLM, *LLM_JUDGED, "failure_share",
             *(names.factual_correctness(m) for m in names.FACTUAL_CORRECTNESS_MODES)}
    base = name.split("/by_", 1)[0]  # a slice of a metric: recall_triples/by_hops/2
    if base in known or _RETRIEVAL_METRIC.fullmatch(base) or base.startswith(("runtime", "llm_tokens", "emissions")):
        return None
    close = difflib.get_close_matches(name, sorted(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return (f"unknown objective {name!r}{hint} (an objective is a metric a run logs, e.g. recall_triples, "
            "hit_at_10_triples, map_at_10_triples, runtime; docs/metrics.md)")


def storage_problem(storage: str | None) -> str | None:
    """Why the Optuna storage URL cannot be opened here (None if it may): not a database URL, or its driver is not
    installed (``postgresql://`` without psycopg). Checked before the study's MLflow experiment is created, so a
    refused storage leaves nothing behind. Never echoes the URL (it may hold a password)."""
    if storage is None:
        return None
    from sqlalchemy.engine import make_url  # local: SQLAlchemy only where a --storage URL is given

    try:
        url = make_url(storage)
        dialect = url.get_dialect()
    except Exception:  # noqa: BLE001 - ArgumentError, NoSuchModuleError: not a URL SQLAlchemy knows
        return "not a database URL SQLAlchemy can open (e.g. sqlite:///mlruns/optuna.db, " \
               "postgresql+psycopg2://user@host/db)"
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        module = getattr(exc, "name", None) or url.get_driver_name()
        return (f"the {url.get_backend_name()} driver {url.get_driver_name()!r} is not installed (no module "
                f"{module!r}): install it (e.g. pip install psycopg2-binary and use postgresql+psycopg2://...) or "
                "pick the driver in the URL (backend+driver://)")
    return None


def check_tune_inputs(problems: list, *, pipeline: Path | None = None, objectives: list[str] | None = None,
                      storage: str | None = None) -> None:
    """What ``tune`` and ``tune-all`` can refuse before any study, trial or MLflow experiment exists: a pipeline file
    that cannot be read in bounded time, a value every trial would trip over, an objective no run logs, a storage
    whose driver is missing."""
    if pipeline is not None:
        bounded = yaml_file_problem(Path(pipeline))
        if bounded is not None:
            problems.append(bounded)
        else:  # values every trial would trip over (evaluation.k, a device this machine lacks); the rest: run_tune
            try:
                problems.extend(config_value_problems(load_pipeline(pipeline)))
            except InputError:
                pass  # reported by run_tune with the search space's own checks
    for name in objectives or []:
        why = objective_problem(name)
        if why:
            problems.append(InputError(why, field="--objectives"))
    why = storage_problem(storage)
    if why:
        problems.append(InputError(why, field="--storage"))
    from hublab.config import settings

    bound_tracking_retries()  # as `hublab run`: seconds, not MLflow's minutes of retries, once a study runs
    why = tracking_problem(settings().root)
    if why:
        problems.append(InputError(why, field="MLFLOW_TRACKING_URI"))
