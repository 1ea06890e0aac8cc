"""The MLflow store: a server that answers, a sqlite store that can be written and is not locked, an artifact folder
that takes new files; checked in seconds, before the first question."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from hublab.preflight.outputs import _probe_dir, output_dir_problem
from hublab.redact import scrub

#: seconds to wait for a tracking server before giving up (a closed port answers at once; a black hole does not)
TRACKING_CONNECT_TIMEOUT_S = 3.0


def _artifacts_problem(root: Path, experiment: str | None) -> str | None:
    """The project store's artifact folders (``mlruns/artifacts`` and the experiment's) must take new files: a
    read-only one failed the run at its first artifact, with a traceback, after its questions."""
    from hublab.config import settings as _settings

    name = experiment or str(_settings(root).section("tracking").get("experiment", "hublab"))
    arts = root / "mlruns" / "artifacts"
    try:
        folder = arts / name if (arts / name).exists() or (arts / name).is_symlink() else arts  # where runs go
        why = _probe_dir(folder) if folder.exists() or folder.is_symlink() else None
    except OSError as exc:  # a name the file system refuses (too long): one line, not a traceback
        return f"the MLflow artifacts folder of experiment {name[:40]!r}… cannot be used: {exc.strerror or exc}"
    return f"MLflow artifacts folder {folder} cannot be written: {why}" if why else None


def tracking_problem(root: Path, experiment: str | None = None) -> str | None:
    """One line if the MLflow store cannot be used: a server that does not answer (checked with a short connect,
    not MLflow's minutes of retries), a sqlite store that cannot be written or is locked, or (the project's own
    store) an artifact folder of ``experiment`` that cannot be written."""
    from hublab.config import tracking_uri

    uri = tracking_uri(root)
    parsed = urlparse(uri)
    shown = scrub(uri)
    if parsed.scheme in ("http", "https"):
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            with socket.create_connection((parsed.hostname or "127.0.0.1", port), timeout=TRACKING_CONNECT_TIMEOUT_S):
                pass
        except OSError as exc:
            return f"MLflow tracking server {shown} is unreachable ({exc.strerror or exc})"
        return None
    if parsed.scheme == "sqlite":
        db = Path(uri[len("sqlite:///"):]) if uri.startswith("sqlite:///") else None
        if db is None or str(db) in ("", ":memory:"):
            return None
        if db.exists():
            if not db.is_file():
                return f"MLflow store {shown}: {db} is not a file"
            from hublab.dburl import sqlite_file_problem

            if damage := sqlite_file_problem(db):
                return (f"MLflow store {shown}: {db} {damage}: move it aside and rerun (a new store starts empty; "
                        "the runs in it are lost unless you have a copy)")
            # opened for writing, not locked (another run may be writing right now); sqlite also needs to create
            # its journal beside the file
            try:
                os.close(os.open(db, os.O_RDWR))
            except OSError as exc:
                return f"MLflow store {shown} cannot be written ({exc.strerror or exc})"
            why = _probe_dir(db.parent)
            if why:
                return f"MLflow store {shown} cannot be written: {why}"
            from hublab.dburl import sqlite_lock_problem

            locked = sqlite_lock_problem(db)
            if locked:
                return f"MLflow store {shown} {locked}"
            own = db.resolve() == (root / "mlruns" / "mlflow.db").resolve()
            return _artifacts_problem(root, experiment) if own else None
        why = output_dir_problem(db.parent)
        return f"MLflow store {shown} cannot be created: {why}" if why else None
    if parsed.scheme in ("", "file"):
        return f"MLflow tracking URI {shown}: a file store is not supported by MLflow 3 (use sqlite:/// or http://)"
    from hublab.dburl import server_problem

    return server_problem(uri, f"MLflow store {shown}")  # a database server (postgresql://, mysql://)


def bound_tracking_retries() -> None:
    """MLflow retries an unreachable server for minutes by default; bound it to seconds (user settings win)."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
