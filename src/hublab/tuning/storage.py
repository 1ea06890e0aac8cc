"""Optuna storage for studies shared by several workers (processes, machines) that may die at any time.

* Heartbeats: every running trial records a heartbeat; a trial whose worker stopped beating for
  ``grace_period`` seconds is marked FAIL by whichever worker looks next, and
  ``RetryHeartbeatStaleTrialCallback(max_retry)`` (formerly ``RetryFailedTrialCallback``) puts a copy back
  into the queue, so another worker (or the rerun) runs it. Live workers' trials are never touched. A trial
  whose worker died before its first heartbeat (between taking the trial and starting the heartbeat thread) has
  no heartbeat at all, which Optuna never judges stale: the first worker that looks gives it one
  (:meth:`StudyStorage._get_stale_trial_ids`), so it goes stale after the grace period like any other.
* ``planned_only``: for OFAT studies a worker may only *take* enqueued trials; when the queue is empty
  Optuna would otherwise create a fresh, sampled (= unplanned, possibly duplicate) trial. With the flag set
  that attempt raises :class:`NoPlannedTrialLeft` before any trial is created.
* Reported values in one write: a trial's per-question values (``trial.report``, one a question for the Wilcoxon
  pruner) are kept by the worker that reports them and written in one transaction by the study's objective
  (:func:`write_reported`) as soon as the trial's evaluation ends, or when the trial is next read, not one
  transaction (and one disk sync) each: they were a sixth of a comparison's time. The worker's own
  pruner checks them from Optuna's in-trial copy, every reader in the worker sees them, and a trial's final record is
  the same; only another process looking at a running trial sees its values later.
* :func:`study_lock`: a cross-process lock per storage (a lock file next to a SQLite database, a session
  advisory lock on PostgreSQL, ``GET_LOCK`` on MySQL) for the few read-then-write steps that must not
  interleave between workers: enqueueing the OFAT list and creating the study's parent MLflow run.
* Bounded connections: every connection to a server storage (PostgreSQL, MySQL) gives up after
  ``CONNECT_TIMEOUT_S`` (libpq and the MySQL drivers wait forever by default: a port that accepts and never
  answers hung ``hublab tune`` silently); a storage that cannot be reached is one line naming it.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import RDBStorage
from optuna.trial import FrozenTrial, TrialState

from hublab.dburl import (  # noqa: F401
    CONNECT_TIMEOUT_S,
    SQLITE_TIMEOUT_S,
    connect_args,
    sqlite_file_problem,
    sqlite_lock_problem,
)
from hublab.errors import InputError
from hublab.redact import scrub

DEFAULT_HEARTBEAT_S = 30
DEFAULT_GRACE_S = 120


class NoPlannedTrialLeft(Exception):
    """Raised instead of creating an unplanned trial in a study whose trials must all be enqueued."""


class StudyStorage(RDBStorage):
    """``RDBStorage`` with heartbeats, one retry for trials of dead workers and the ``planned_only`` switch."""

    def __init__(self, url: str, *, heartbeat_interval: int = DEFAULT_HEARTBEAT_S,
                 grace_period: int | None = DEFAULT_GRACE_S, max_retry: int = 1) -> None:
        import warnings

        import sqlalchemy

        path = sqlite_path(url)
        if path is not None and (problem := sqlite_file_problem(path)):
            raise InputError(f"the Optuna storage {path} {problem}: move it aside (its studies are lost unless you "
                             "have a copy) and rerun; a new storage starts empty", file=str(path), field="--storage")
        if path is not None and path.is_file() and (locked := sqlite_lock_problem(path)):
            raise InputError(f"the Optuna storage {path} {locked}", file=str(path), field="--storage")
        engine_kwargs: dict[str, Any] = {"connect_args": connect_args(url)}
        # workers starting together on a new database race creating Optuna's tables (on PostgreSQL the loser died
        # with "duplicate key ... alembic_version"): the schema is created under a lock shared by all workers
        try:
            with schema_lock(url), warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                callback = optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=max_retry)
                super().__init__(url, engine_kwargs=engine_kwargs, heartbeat_interval=heartbeat_interval,
                                 grace_period=grace_period, heartbeat_stale_trial_callback=callback)
        except sqlalchemy.exc.OperationalError as exc:
            if sqlite_path(url) is not None:
                raise  # a database file: its own messages (locked, not a database) are reported by the caller
            said = " ".join(str(getattr(exc, "orig", None) or exc).split())[:200]
            raise InputError(f"the Optuna storage {scrub(url)} did not answer ({scrub(said)}; each connection is "
                             f"bounded at {CONNECT_TIMEOUT_S} s): start it or fix the URL", field="--storage") from None
        self.planned_only: set[int] = set()  # study ids
        self._reported: dict[int, dict[int, float]] = {}  # trial id -> step -> value, not yet written
        # re-entrant: a write refused for a finished trial reads the trial back (Optuna's message) through get_trial
        self._reported_lock = threading.RLock()

    def set_trial_intermediate_value(self, trial_id: int, step: int, intermediate_value: float) -> None:
        with self._reported_lock:
            self._reported.setdefault(trial_id, {})[step] = intermediate_value

    def write_reported(self, trial_id: int | None = None) -> None:
        """The kept values of ``trial_id`` (None: of every trial), one transaction a trial."""
        from optuna.storages._rdb.storage import _create_scoped_session  # Optuna's own session scope

        with self._reported_lock:
            ids = list(self._reported) if trial_id is None else [trial_id] if trial_id in self._reported else []
            for tid in ids:
                # taken out first: a write that fails raises to this caller once, never again at every later read
                values = self._reported.pop(tid)
                try:
                    with _create_scoped_session(self.scoped_session, True) as session:
                        for step, value in values.items():
                            self._set_trial_intermediate_value_without_commit(session, tid, step, value)
                except optuna.exceptions.UpdateFinishedTrialError:
                    pass  # ended by another worker (this one looked dead): a late report is moot, as Optuna's was

    def get_trial(self, trial_id: int) -> FrozenTrial:
        self.write_reported(trial_id)
        return super().get_trial(trial_id)

    def _get_trials(self, study_id: int, states: Any, included_trial_ids: set[int],
                    trial_id_greater_than: int) -> list[FrozenTrial]:
        # every read of a study's trials (``get_all_trials`` and Optuna's cached storage) goes through here
        if self._reported:
            self.write_reported()
        return super()._get_trials(study_id, states, included_trial_ids, trial_id_greater_than)

    def set_trial_state_values(self, trial_id: int, state: TrialState, values: Any = None) -> bool:
        self.write_reported(trial_id)
        return super().set_trial_state_values(trial_id, state, values)

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        """Optuna's stale trials, after giving every RUNNING trial of the study that has no heartbeat one now.

        Optuna skips a RUNNING trial with no heartbeat row (by design: its own test says so). A worker killed
        after ``study.ask()`` took a trial and before the heartbeat thread's first beat leaves exactly that, and
        every later worker then waited for it forever (the kill -9 test caught it once in a fresh-clone CI run:
        the rerun hung on trial 0). The beat is the database's clock, as Optuna's; a live worker's own thread
        overwrites it within a heartbeat interval, a dead worker's goes stale after ``grace_period``."""
        self._beat_silent_trials(study_id)
        return super()._get_stale_trial_ids(study_id)

    def _beat_silent_trials(self, study_id: int) -> None:
        from optuna.storages._rdb import models  # Optuna's table models: no public query for this

        session = self.scoped_session()
        try:
            silent = [tid for (tid,) in session.query(models.TrialModel.trial_id)
                      .outerjoin(models.TrialHeartbeatModel)
                      .filter(models.TrialModel.study_id == study_id,
                              models.TrialModel.state == TrialState.RUNNING,
                              models.TrialHeartbeatModel.trial_heartbeat_id.is_(None))]
            session.commit()
        except Exception:
            session.rollback()
            raise
        for trial_id in silent:
            self.record_heartbeat(trial_id)  # a race with the worker's first beat is a duplicate key, ignored

    # Optuna's Study.ask() creates a trial without a template when the queue is empty; enqueue_trial and
    # the retry callback always pass one. (_CachedStorage calls _create_new_trial on its backend.)
    def _create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> FrozenTrial:
        if template_trial is None and study_id in self.planned_only:
            raise NoPlannedTrialLeft(f"no enqueued trial left in study {study_id}")
        return super()._create_new_trial(study_id, template_trial)


def write_reported(study: optuna.Study, trial: optuna.Trial) -> None:
    """Write the values ``trial`` reported, from inside its objective: a termination signal there ends the trial
    FAILED, while one in Optuna's ``tell`` (where the values would be written otherwise) leaves it RUNNING."""
    backend = getattr(study._storage, "_backend", study._storage)  # noqa: SLF001 - the RDBStorage behind the cache
    if isinstance(backend, StudyStorage):
        backend.write_reported(trial._trial_id)  # noqa: SLF001 - the trial's id in its storage


def make_storage(url: str, *, heartbeat_interval: int = DEFAULT_HEARTBEAT_S, grace_period: int | None = DEFAULT_GRACE_S,
                 max_retry: int = 1) -> StudyStorage:
    return StudyStorage(url, heartbeat_interval=heartbeat_interval, grace_period=grace_period, max_retry=max_retry)


def sqlite_path(url: str) -> Path | None:
    from sqlalchemy.engine import make_url

    u = make_url(url)
    if u.get_backend_name() != "sqlite" or not u.database or u.database == ":memory:":
        return None
    return Path(u.database)


_local_locks: dict[str, threading.Lock] = {}


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``<path>.hublab.lock`` (flock: released by the OS when a holder dies)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_name(path.name + ".hublab.lock").open("a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def schema_lock(url: str) -> Iterator[None]:
    """A lock shared by every worker on the storage ``url``, held while Optuna creates or checks its schema: a
    lock file next to a SQLite database, a server lock on PostgreSQL/MySQL (through a short-lived engine: the
    storage's own does not exist yet)."""
    path = sqlite_path(url)
    if path is not None:
        with file_lock(path):
            yield
        return
    import sqlalchemy

    try:
        engine = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool, connect_args=connect_args(url))
    except Exception:  # noqa: BLE001 - not a URL SQLAlchemy can open: Optuna reports it
        yield
        return
    try:
        with _server_lock(engine, "hublab-optuna-schema", f"{url}|schema"):
            yield
    finally:
        engine.dispose()


@contextlib.contextmanager
def study_lock(storage: RDBStorage, name: str) -> Iterator[None]:
    """Hold a lock shared by all workers of study ``name`` on this storage."""
    url = str(storage.url)
    path = sqlite_path(url)
    if path is not None:
        with file_lock(path):
            yield
        return
    with _server_lock(storage.engine, f"hublab-study:{name}", f"{url}|{name}"):
        yield


#: backend → (acquire, release) of a session-level named lock; PostgreSQL's takes a 64-bit key, MySQL's a name
_SERVER_LOCKS = {
    "postgresql": ("SELECT pg_advisory_lock(:n)", "SELECT pg_advisory_unlock(:n)"),
    "mysql": ("SELECT GET_LOCK(:n, -1)", "SELECT RELEASE_LOCK(:n)"),
    "mariadb": ("SELECT GET_LOCK(:n, -1)", "SELECT RELEASE_LOCK(:n)"),
}


@contextlib.contextmanager
def _server_lock(engine: Any, name: str, local_key: str) -> Iterator[None]:
    """A session-level named lock on the database server (advisory lock on PostgreSQL, ``GET_LOCK`` on MySQL);
    a process-local lock for in-memory SQLite or an unknown backend (only this process can reach it anyway)."""
    import sqlalchemy

    backend = engine.dialect.name
    key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)
    if backend in _SERVER_LOCKS:
        acquire, release = _SERVER_LOCKS[backend]
        lock_id: int | str = key if backend == "postgresql" else f"hublab-{key & 0xFFFFFFFF:x}"
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text(acquire), {"n": lock_id})
            try:
                yield
            finally:
                conn.execute(sqlalchemy.text(release), {"n": lock_id})
                conn.commit()
        return
    lock = _local_locks.setdefault(local_key, threading.Lock())
    with lock:
        yield
