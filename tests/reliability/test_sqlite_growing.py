"""A store that another process is writing is not damaged: the constant-time header check of an SQLite file
(``dburl.sqlite_file_problem``) ran while a concurrent writer extended the file, saw the header's new page count
before the file's new size, and refused a healthy Optuna storage as "cut short" (a `tune-all --jobs 2` died on it)."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import time
from pathlib import Path


def _grow(path: str, seconds: float) -> None:
    con = sqlite3.connect(path, isolation_level=None)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO t VALUES (randomblob(3000))")
        con.execute("COMMIT")
    con.close()


def test_a_store_growing_under_another_writer_is_never_called_cut_short(tmp_path: Path):
    from hublab.dburl import sqlite_file_problem

    db = tmp_path / "optuna.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (b BLOB)")
    con.commit()
    con.close()
    writer = mp.get_context("spawn").Process(target=_grow, args=(str(db), 4.0))
    writer.start()
    said = set()
    try:
        while writer.is_alive():
            if problem := sqlite_file_problem(db):
                said.add(problem)
    finally:
        writer.join()
    assert said == set()
    assert db.stat().st_size > 100_000  # it grew while it was checked


def test_a_file_cut_short_is_still_found(tmp_path: Path):
    from hublab.dburl import sqlite_file_problem

    db = tmp_path / "s.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (b BLOB)")
    con.executemany("INSERT INTO t VALUES (randomblob(3000))", [()] * 50)
    con.commit()
    con.close()
    data = db.read_bytes()
    db.write_bytes(data[: len(data) - 4096])
    assert "is cut short" in (sqlite_file_problem(db) or "")
