"""CLI: ``hublab dashboard`` — optuna-dashboard on the studies' storage, checked first.

``optuna-dashboard sqlite:///mlruns/optuna.db`` on a checkout that has no studies yet crashes with a traceback
(``no such table: version_info``) and leaves a 0-byte ``mlruns/optuna.db`` behind (SQLite creates the file it is
asked to open). This command looks before anything connects: a sqlite storage must be a file that holds Optuna's
schema, else it exits 2 with one line saying what creates it; nothing is created. Then it becomes optuna-dashboard
(``exec``) on that storage, host and port."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
from pathlib import Path

import typer

from hublab.cli.app import app
from hublab.errors import InputError

#: the benchmark of the equal-budget study: the time a user waits, as measured (bench/bench_tune_all.py)
TUNE_ALL_BENCH = Path("reports/bench/tune_all.json")


def tune_all_estimate(root: Path | None = None) -> str:
    """How long ``hublab tune-all`` took when last measured (``reports/bench/tune_all.json``), else nothing."""
    import json

    from hublab.config import project_root

    try:
        data = json.loads(((root or project_root()) / TUNE_ALL_BENCH).read_text())
        minutes = max(1, round(float(data["total_s"]) / 60))
        return f", ~{minutes} min with {data.get('jobs', 1)} jobs on {data.get('cpus', '?')} cores as last measured"
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def makes_it() -> str:
    """What writes the studies' storage (README, docs/tuning.md)."""
    return (f"`hublab tune-all` (= `dvc repro tune_all`: every LLM-free method{tune_all_estimate()}) or "
            "`hublab tune PIPELINE --study NAME` creates it")


def sqlite_file(storage: str) -> Path | None:
    """The database file of a ``sqlite:///`` storage URL (relative to the current folder, as SQLAlchemy reads it);
    None for any other storage (a server, checked by optuna-dashboard itself) and for an in-memory database."""
    if not storage.startswith("sqlite:"):
        return None
    from sqlalchemy.engine import make_url

    database = make_url(storage).database
    return Path(database) if database and database != ":memory:" else None


def storage_problem(db: Path) -> str | None:
    """Why optuna-dashboard cannot serve the sqlite file ``db`` (None if it can); opens it read-only, so a missing
    file is not created."""
    if not db.exists():
        return f"no Optuna studies yet: {db} does not exist; {makes_it()}"
    if not db.is_file():
        return f"{db} is not a file"
    if db.stat().st_size == 0:
        return (f"{db} is empty (0 bytes: an earlier optuna-dashboard opened it before any study existed): delete "
                f"it; {makes_it()}")
    try:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        return f"{db} is not a readable SQLite database ({exc})"
    if not {"studies", "version_info"} <= tables:
        return f"{db} holds no Optuna storage (no studies/version_info tables); {makes_it()}"
    return None


def _dashboard_command() -> list[str]:
    """optuna-dashboard of this environment (beside its Python), else the one on PATH."""
    here = Path(sys.executable).parent / "optuna-dashboard"
    found = str(here) if here.is_file() else shutil.which("optuna-dashboard")
    if found is None:
        raise InputError("optuna-dashboard is not installed in this environment (pip install optuna-dashboard)")
    return [found]


@app.command("dashboard")
def dashboard_cmd(
    storage: str | None = typer.Option(None, "--storage", help="Optuna RDB URL (default: the one `hublab tune` "
                                       "writes, sqlite:///mlruns/optuna.db of this project)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to serve on (127.0.0.1: this machine only)."),
    port: int = typer.Option(8081, "--port", min=1, max=65535, help="Port to serve on."),
) -> None:
    """Open the Optuna studies in a browser: optuna-dashboard on the studies' storage, after checking that it
    exists and holds Optuna's schema (else one line saying which command creates it; nothing is created)."""
    from hublab.config import settings

    if storage is None:
        storage = f"sqlite:///{(settings().root / 'mlruns' / 'optuna.db').resolve()}"
    db = sqlite_file(storage)
    if db is not None:
        why = storage_problem(db)
        if why:
            raise InputError(why, field="--storage")
    cmd = [*_dashboard_command(), storage, "--host", host, "--port", str(port)]
    shown = f"{db}" if db is not None else "the storage"
    print(f"optuna-dashboard on http://{host}:{port}/ ({shown}); Ctrl-C stops it", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os.execv(cmd[0], cmd)
