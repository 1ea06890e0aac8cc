"""Database URLs (Optuna storages, MLflow backend stores): the driver arguments that bound one connection, a
bounded check that a server answers, and a constant-time check that an SQLite file is one and whole. libpq and
the MySQL drivers wait forever by default, so a port that accepts and never answers hung ``hublab tune`` (and
would hang a run on a database tracking store) with nothing printed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SQLITE_TIMEOUT_S = 120  # several processes on one file: wait for the write lock instead of failing after 5 s
CONNECT_TIMEOUT_S = 10  # per connection to a database server; a live server on a LAN answers in milliseconds
SERVER_BACKENDS = ("postgresql", "mysql", "mariadb")


def backend_of(url: str) -> str | None:
    """``postgresql``, ``mysql``, ``sqlite``, … (SQLAlchemy's name), None when ``url`` is not a database URL."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).get_backend_name()
    except Exception:  # noqa: BLE001 - not an SQLAlchemy URL
        return None


def connect_args(url: str) -> dict[str, Any]:
    """The driver's arguments that bound one connection (SQLite: the wait for another process's write lock)."""
    backend = backend_of(url)
    if backend == "sqlite":
        return {"timeout": SQLITE_TIMEOUT_S}
    if backend in SERVER_BACKENDS:
        return {"connect_timeout": CONNECT_TIMEOUT_S}
    return {}


def server_problem(url: str, what: str) -> str | None:
    """One line when the database server at ``url`` does not answer within ``CONNECT_TIMEOUT_S`` (``what`` names
    it: "the Optuna storage …"), None when it answers or ``url`` is not a server's."""
    if backend_of(url) not in SERVER_BACKENDS:
        return None
    import sqlalchemy

    try:
        engine = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool, connect_args=connect_args(url))
        with engine.connect():
            pass
        engine.dispose()
    except ModuleNotFoundError:
        return None  # the driver is missing: the caller's own message says which one to install
    except Exception as exc:  # noqa: BLE001 - the driver's errors: refused, timed out, authentication
        said = " ".join(str(getattr(exc, "orig", None) or exc).split())[:200]
        return (f"{what} did not answer ({said}; each connection is bounded at {CONNECT_TIMEOUT_S} s): start it or "
                "fix the URL")
    return None


def sqlite_file_problem(path: Path) -> str | None:
    """What is wrong with an SQLite database file, read from its 100-byte header (constant time: a full
    ``PRAGMA quick_check`` of a 900 MB MLflow store takes two minutes): not an SQLite database (random bytes, a
    text file), or shorter than its header says (cut short by a copy or a full disk). None when it looks whole, is
    empty (SQLite starts an empty file afresh) or does not exist.

    A file another process is writing can look cut short for a moment (its header already counts the pages being
    appended): such a reading is taken again under a read transaction, during which no writer can change the file.
    """
    problem = _header_problem(path)
    if problem is None or not problem.startswith("is cut short"):
        return problem
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=SQLITE_LOCK_WAIT_S, isolation_level=None)
    except sqlite3.Error:
        return problem
    try:
        con.execute("BEGIN")
        con.execute("SELECT count(*) FROM sqlite_master").fetchall()  # a shared lock: writers wait until it ends
        return _header_problem(path)
    except sqlite3.Error:
        return problem
    finally:
        con.close()


def _header_problem(path: Path) -> str | None:
    """:func:`sqlite_file_problem`'s reading of the header and the size (the header first: a writer extends the
    file before a later reading of its header could count the new pages)."""
    try:
        if not path.is_file():
            return None
        with path.open("rb") as f:
            head = f.read(100)
        size = path.stat().st_size
        if size == 0:
            return None
    except FileNotFoundError:
        return None  # not there (yet, or any more): SQLite creates it
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        return "is not an SQLite database (damaged, or another kind of file)"
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    header_size_valid = pages > 0 and head[24:28] == head[92:96]  # SQLite's rule for the in-header database size
    if page < 512 or size % page or (header_size_valid and size < pages * page):
        said = f"{pages * page} bytes" if header_size_valid else "whole pages"
        return f"is cut short ({size} bytes where its header says {said})"
    return None


#: how long a run waits, before anything, for another process's write transaction on an SQLite store to end (a
#: concurrent run's write holds it for milliseconds; a shell or tool that left one open holds it until it ends)
SQLITE_LOCK_WAIT_S = 10.0


def sqlite_lock_problem(path: Path, wait_s: float | None = None) -> str | None:
    """One line when another process has held a write transaction on the SQLite file ``path`` for over ``wait_s``
    (SQLite's own busy wait, then ``BEGIN IMMEDIATE`` gives up); None when a write could start. Nothing is written:
    the transaction is rolled back at once."""
    import sqlite3

    wait_s = SQLITE_LOCK_WAIT_S if wait_s is None else wait_s
    try:
        con = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=wait_s, isolation_level=None)
    except sqlite3.Error:
        return None  # not openable for writing: the caller's own checks say why
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if is_locked(exc):
            return (f"is locked by another process (a write transaction open for over {wait_s:g} s: a shell, a "
                    "viewer or another tool holding it); nothing was changed: rerun once it is released")
        return None
    finally:
        con.close()
    return None


def is_locked(exc: BaseException) -> bool:
    """Whether ``exc`` or an exception it was raised from is SQLite's "database is locked" (the busy wait spent)."""
    import sqlite3

    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        for e in (cur, getattr(cur, "orig", None)):
            if isinstance(e, sqlite3.OperationalError) and "locked" in str(e):
                return True
        cur = cur.__cause__ or cur.__context__
    return False
