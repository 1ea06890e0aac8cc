"""An interrupted study says so once: Optuna logs a trial stopped by Ctrl-C, SIGTERM or SIGHUP as a warning with
the whole traceback (SQLAlchemy's or torch's frames included), then again as "failed with value None"; the CLI's
own line (``interrupted (SIGTERM): …``) says what happened and how to resume. Installed by every study process
(a ``tune-all --jobs`` job too)."""

from __future__ import annotations

import logging
import re

_TRIAL = re.compile(r"Trial (\d+) failed")


class _DropInterruptedTrials(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self._trials: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        found = _TRIAL.match(record.getMessage())
        if found is None:
            return True
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, KeyboardInterrupt):  # hublab.signals.Terminated is one
            self._trials.add(found.group(1))
            return False
        return found.group(1) not in self._trials


def quiet_interrupted_trials() -> None:
    """Filter Optuna's handlers (they exist once optuna is imported): every other warning stays."""
    import optuna  # noqa: F401 - creates the library's handler

    for handler in logging.getLogger("optuna").handlers:
        if not any(isinstance(f, _DropInterruptedTrials) for f in handler.filters):
            handler.addFilter(_DropInterruptedTrials())
