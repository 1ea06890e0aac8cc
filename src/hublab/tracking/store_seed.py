"""A new project's MLflow store starts as a copy of an empty store already at MLflow's schema.

MLflow creates a new SQLite store by running every one of its schema migrations (alembic): 2–4 s of CPU, paid by
the first command in every new project folder (and by every test project). The migrated, empty schema is the same
for every store of one MLflow version, so it is made once per user and MLflow version (under
``$XDG_CACHE_HOME/hublab/mlflow-store``, else ``~/.cache/hublab/mlflow-store``) and copied. The copy holds no
experiment: MLflow creates its ``Default`` experiment on first use, with the location it would give a store it
had migrated itself, so a seeded store and a migrated one are the same tables, indices and rows. Where the cache
cannot be written, MLflow migrates the store itself, as before."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from hublab.atomic import atomic_path


def template_dir() -> Path:
    """Where the empty stores are kept: ``$XDG_CACHE_HOME/hublab/mlflow-store``, else ``~/.cache/...``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hublab" / "mlflow-store"


def _template_name() -> str:
    import mlflow
    import sqlalchemy

    return f"mlflow-{mlflow.__version__}-sqlalchemy-{sqlalchemy.__version__}-sqlite-{sqlite3.sqlite_version}.db"


def _make_template(target: Path) -> None:
    """Migrate an empty store in a temporary file beside ``target``, drop the ``Default`` experiment MLflow put in
    it (its location names the temporary folder), then move it into place whole (two processes making it at once
    each move a complete file)."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".making-", suffix=".db", dir=target.parent)
    os.close(fd)
    os.unlink(tmp)  # MLflow creates the file itself
    try:
        store = SqlAlchemyStore(f"sqlite:///{tmp}", str(target.parent / "unused-artifacts"))
        store.engine.dispose()
        con = sqlite3.connect(tmp)
        try:
            con.execute("DELETE FROM experiment_tags WHERE experiment_id = 0")
            con.execute("DELETE FROM experiments WHERE experiment_id = 0")
            con.commit()
        finally:
            con.close()
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def seed_store(db: Path) -> bool:
    """Create the SQLite store ``db`` as a copy of the empty, migrated template (made on first use). Returns
    whether it did; ``False`` when ``db`` exists or the template cannot be made or read (MLflow then creates the
    store itself). The caller holds the store's set-up lock."""
    if db.exists():
        return False
    try:
        template = template_dir() / _template_name()
        if not template.exists():
            _make_template(template)
        with atomic_path(db) as tmp:  # a whole store or none, with the mode a new file gets
            shutil.copyfile(template, tmp)
    except Exception:  # noqa: BLE001 - any failure (a read-only home, another MLflow): MLflow migrates it itself
        return False
    return True
