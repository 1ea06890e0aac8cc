"""MLflow conventions: a sqlite store under ``mlruns/`` (the file store is refused by MLflow 3), metrics
logged under HubLab's own names (``hublab.evaluation.names``: valid MLflow keys as they are, so nothing is
renamed here — an invalid name is a bug and raises), secrets never logged.

Portable tracking: MLflow records artifact locations as absolute ``file://`` URIs. ``setup`` re-points the
locations recorded under another checkout's ``mlruns/artifacts`` at this checkout's, so a copied or moved
checkout reads and writes its own artifacts, never the old checkout's. ``MLFLOW_TRACKING_URI`` from the
environment wins over the project store (and is then left alone).

Secrets (belt and braces; configs holding secrets are already refused at load time): ``secret_values`` are
the values of environment variables whose names look secret (``OPENAI_API_KEY``…) and of the variables a
config names in ``*_env`` keys; ``scrub`` masks them in any string written to params, tags or artifacts.
"""

from __future__ import annotations

import math
import os
import sqlite3
from pathlib import Path
from typing import Any

from hublab.config import OWN_TRACKING_URIS, project_tracking_uri, tracking_uri  # noqa: F401 (re-exported)
from hublab.evaluation import names
from hublab.pipeline.config import looks_secret

MAX_PARAM_LEN = 6000
MASK = "***"
_MARK = "/mlruns/artifacts"


_OURS = OWN_TRACKING_URIS  # the one set: config.tracking_uri must see what setup() exported


def artifact_root(root: Path) -> str:
    return (root / "mlruns" / "artifacts").resolve().as_uri()


def relocate_artifacts(root: Path) -> int:
    """Rewrite artifact URIs recorded under another checkout's ``mlruns/artifacts`` to this checkout's
    (``experiments.artifact_location`` and ``runs.artifact_uri`` of the project sqlite store). Returns the
    number of rows changed."""
    db = root / "mlruns" / "mlflow.db"
    if not db.exists():
        return 0
    here = artifact_root(root)
    changed = 0
    con = sqlite3.connect(str(db), timeout=60)
    try:
        for table, col, key in (("experiments", "artifact_location", "experiment_id"),
                                ("runs", "artifact_uri", "run_uuid")):
            try:
                rows = con.execute(f"SELECT {key}, {col} FROM {table} WHERE {col} LIKE ?",  # noqa: S608
                                   (f"file://%{_MARK}%",)).fetchall()
            except sqlite3.OperationalError:  # schema not created yet
                continue
            for k, uri in rows:
                head, _, tail = uri.partition(_MARK)
                if head + _MARK != here:
                    con.execute(f"UPDATE {table} SET {col} = ? WHERE {key} = ?", (here + tail, k))  # noqa: S608
                    changed += 1
        con.commit()
    finally:
        con.close()
    return changed


def setup(root: Path, experiment: str) -> str:
    """Point MLflow at the project store (or ``$MLFLOW_TRACKING_URI``); create the experiment with its
    artifacts under this checkout's ``mlruns/artifacts``; re-point locations left by a copied checkout."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from hublab.errors import InputError
    from hublab.pipeline.validate import name_problem

    why = name_problem(experiment, "experiment name")
    if why:  # it becomes a folder under mlruns/artifacts
        raise InputError(why, field="--experiment")
    import mlflow

    uri = tracking_uri(root)
    own_store = uri == project_tracking_uri(root)
    if own_store:
        (root / "mlruns").mkdir(parents=True, exist_ok=True)
        _OURS.add(uri)
    mlflow.set_tracking_uri(uri)
    known = _SET_UP.get((uri, experiment))
    if known is not None and known[1] == _sqlite_identity(uri):
        return known[0]  # this process set this store and experiment up already (every trial of a study asks)
    exp_id = _get_or_create_experiment(mlflow, experiment) if not own_store else _set_up_own(root, experiment)
    if (store := _sqlite_identity(uri)) is not None:  # the file exists once set up
        _SET_UP[(uri, experiment)] = (exp_id, store)
    return exp_id


#: (tracking URI, experiment) -> (experiment id, the SQLite file's identity) set up in this process
_SET_UP: dict[tuple[str, str], tuple[str, tuple[int, int]]] = {}


def _sqlite_identity(uri: str) -> tuple[int, int] | None:
    """The SQLite store file's (device, inode): a store deleted or replaced since is set up again. None for a
    server, and for a file not there yet (then nothing is remembered)."""
    if not uri.startswith("sqlite:///"):
        return None
    try:
        st = os.stat(uri[len("sqlite:///"):])
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _set_up_own(root: Path, experiment: str) -> str:
    """Our sqlite store: creating its schema (alembic migrations) and the experiment are not safe to run from two
    processes at once (the loser died in a migration), so they run under a file lock."""
    import fcntl

    import mlflow

    with open(root / "mlruns" / ".setup.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        exp = mlflow.get_experiment_by_name(experiment)  # creates the schema on first use
        relocate_artifacts(root)
        if exp is None:
            return mlflow.create_experiment(experiment, artifact_location=f"{artifact_root(root)}/{experiment}")
        return exp.experiment_id


def _get_or_create_experiment(mlflow: Any, experiment: str) -> str:
    """The experiment's id on a tracking server, created if missing. Two processes starting their first run in
    a new experiment at once both find it missing; the loser's create is refused (RESOURCE_ALREADY_EXISTS) and it
    uses the winner's."""
    from mlflow.exceptions import MlflowException

    exp = mlflow.get_experiment_by_name(experiment)
    if exp is not None:
        return exp.experiment_id
    try:
        return mlflow.create_experiment(experiment)
    except MlflowException:
        exp = mlflow.get_experiment_by_name(experiment)
        if exp is None:
            raise
        return exp.experiment_id


def secret_values(extra_env_names: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Values that must never be written anywhere: the keys the one scrubber knows (``hublab.redact``) + the
    values of the named environment variables."""
    from hublab.redact import known_secrets

    return known_secrets([os.environ.get(n, "") for n in extra_env_names])


def env_names_in(flat: dict[str, Any]) -> list[str]:
    """Env var names a flattened config refers to (``*_env`` keys)."""
    return [str(v) for k, v in flat.items() if k.endswith("_env") and isinstance(v, str) and v]


def scrub(text: str, secrets: list[str] | None = None) -> str:
    """The one scrubber (:func:`hublab.redact.scrub`) with this call's extra secret values."""
    from hublab.redact import scrub as scrub_text

    return scrub_text(text, secrets or ())


def scrub_obj(obj: Any, secrets: list[str]) -> Any:
    """Recursively drop secret-looking keys and mask secret values in strings (for config/records dumps)."""
    if isinstance(obj, dict):
        return {k: scrub_obj(v, secrets) for k, v in obj.items() if not looks_secret(str(k))}
    if isinstance(obj, list | tuple):
        return [scrub_obj(v, secrets) for v in obj]
    if isinstance(obj, str):
        return scrub(obj, secrets)
    return obj


def safe_params(flat: dict[str, Any], secrets: list[str] | None = None) -> dict[str, str]:
    """Drop anything that looks like a secret key (only ``*_env`` names of env vars are kept) and mask
    secret values."""
    secrets = secret_values(env_names_in(flat)) if secrets is None else secrets
    out = {}
    for k, v in flat.items():
        if any(looks_secret(part) for part in k.split(".")):
            continue
        s = "" if v is None else str(v)
        out[k] = scrub(s, secrets)[:MAX_PARAM_LEN]
    return out


def safe_tags(tags: dict[str, Any], secrets: list[str] | None = None) -> dict[str, str]:
    secrets = secret_values() if secrets is None else secrets
    return {k: scrub(str(v), secrets)[:5000] for k, v in tags.items() if not looks_secret(k)}


def finite_metrics(metrics: dict[str, Any]) -> dict[str, float]:
    """The finite numeric metrics, under their own names (checked against the naming scheme, never renamed)."""
    out = {}
    for k, v in metrics.items():
        if isinstance(v, bool) or not isinstance(v, int | float):
            continue
        if math.isfinite(float(v)):
            out[names.check(k)] = float(v)
    return out
