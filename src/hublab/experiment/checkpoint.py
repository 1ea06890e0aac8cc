"""Per-run checkpoint (finished questions, fsync'ed) and the exclusive lock that guards it.

The lock is taken before anything shared is touched (checkpoint files, MLflow run status): a second process
started on the same run identity is refused and changes nothing.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from hublab.atomic import write_text_atomic
from hublab.errors import HubLabError, InputError


class RunLocked(HubLabError):
    """Another process holds this run (same run identity)."""


class RunLock:
    """``flock`` on ``<dir>/.lock``: released by the OS when the holder dies, so a killed run never blocks."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / ".lock"
        self._fh = None

    def acquire(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = self.path.open("a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            fh.close()
            raise RunLocked(f"run {self.path.parent.name} is being run by another process (lock {self.path}); "
                            "nothing was changed — wait for it or stop it first") from exc
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh
        return self

    def release(self) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class Checkpoint:
    """Append-only JSONL of finished questions plus a small state file (the MLflow run of each owner)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.path = directory / "predictions.jsonl"
        self.state_path = directory / "state.json"

    def load(self) -> dict[str, dict[str, Any]]:
        done: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            with self.path.open(encoding="utf-8") as fh:
                for line in fh:
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut by a crash: that question is simply redone
                    done[rec["key"]] = rec
        return done

    def append(self, rec: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def rewrite(self, records: list[dict[str, Any]]) -> None:
        write_text_atomic(self.path, "".join(json.dumps(rec, ensure_ascii=False, default=str) + "\n"
                                             for rec in records))

    def state(self) -> dict[str, Any]:
        """The run's state (its MLflow runs, :meth:`run_for`); ``{}`` before the first question. A damaged file
        (truncated by a full disk, emptied, edited) is a located error saying what to do, never a traceback."""
        try:
            text = self.state_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            raise self._damaged(f"cannot be read ({exc})") from None
        try:
            state = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self._damaged(f"is not JSON ({'empty' if not text.strip() else exc.msg})") from None
        if (not isinstance(state, dict) or not isinstance(state.get("runs", {}), dict)
                or not isinstance(state.get("run_id", ""), str)):
            raise self._damaged("is not a run state ({\"run_id\": ..., \"runs\": {...}, \"identity\": ...})")
        return state

    def _damaged(self, why: str) -> InputError:
        return InputError(f"the run's checkpoint state {why}: delete it to go on with a new MLflow run (the answers "
                          f"in {self.path.name} are kept and not asked again), or rerun with --no-resume",
                          file=str(self.state_path))

    def save_state(self, state: dict[str, Any]) -> None:
        write_text_atomic(self.state_path, json.dumps(state, indent=1, sort_keys=True))

    @staticmethod
    def run_for(state: dict[str, Any], owner: str) -> str | None:
        """The MLflow run these answers were recorded in for ``owner`` (:func:`run_owner`). The answers are keyed by
        what determines them, not by the run's name: a renamed pipeline copy, another ``--experiment`` or another
        study's parent reuses every answer but gets its own MLflow run, never the old one under the old name."""
        runs = state.get("runs")
        found = runs.get(owner) if isinstance(runs, dict) else None
        return found if isinstance(found, str) else None

    def record_run(self, state: dict[str, Any], owner: str, run_id: str, identity: dict[str, Any]) -> None:
        """Add ``owner``'s new MLflow run to the state (the runs of other owners are kept)."""
        runs = dict(state.get("runs") or {}) if isinstance(state.get("runs"), dict) else {}
        runs[owner] = run_id
        self.save_state({"run_id": run_id, "runs": runs, "identity": identity})  # run_id: the latest, for a reader

    def reset(self) -> None:
        for p in (self.path, self.state_path):
            p.unlink(missing_ok=True)


def run_owner(experiment: str, run_name: str, parent_run_id: str | None) -> str:
    """Who an MLflow run of a checkpoint belongs to: its experiment, its name and its parent run (a study's)."""
    return json.dumps([experiment, run_name, parent_run_id or ""], ensure_ascii=False)
