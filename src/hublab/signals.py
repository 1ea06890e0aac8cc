"""SIGTERM and SIGHUP end a command as Ctrl-C does: a service manager's stop, ``kill`` or a
closed terminal then leave what an interrupt leaves — the MLflow run marked KILLED, the checkpoint consistent with
its traces, a message saying how to resume — instead of a silent exit 143/129 with the run left RUNNING. The
signal is raised as :class:`Terminated`, a ``KeyboardInterrupt``, so every ``except KeyboardInterrupt`` and
``finally`` that already handles Ctrl-C handles it too."""

from __future__ import annotations

import contextlib
import signal
import threading

#: the signals handled like SIGINT (SIGHUP does not exist on Windows)
HANDLED = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """A termination signal, raised where the main thread was."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


#: after SIGTERM/SIGHUP a process gets this long to end its runs and trials; then it exits anyway (128 + n), saying so:
#: a cleanup that blocks (a database locked by a sibling that was stopped too, a call into a busy server) must not keep
#: a stopped process alive, nor its parent waiting on it (tune-all's job processes under a loaded machine did). Longer
#: than tune-all's wait for its jobs (45 s): a parent that gave up first killed its jobs mid-cleanup, silently, their
#: trials left RUNNING (a fresh-clone CI run caught it)
GRACE_S = 60.0
_armed: list[threading.Timer] = []
#: a worker process that waits for tasks (:func:`exit_when_idle`) and the number of tasks it runs now (:func:`busy`)
_worker = {"idle_exit": False, "busy": 0}


def _give_up(signum: int) -> None:
    """The cleanup after a signal blocked past ``GRACE_S``: say so, then exit without waiting for it."""
    import os
    import sys

    name = signal.Signals(signum).name
    with contextlib.suppress(Exception):
        sys.stderr.write(f"interrupted ({name}): the cleanup did not finish within {GRACE_S:.0f} s; exiting now (a "
                         "running trial is failed and retried by its study's heartbeats, a run resumes from its "
                         "checkpoint)\n")
        sys.stderr.flush()
    os._exit(128 + signum)


def _raise(signum: int, _frame: object) -> None:
    if _worker["idle_exit"] and not _worker["busy"]:
        import os

        os._exit(128 + signum)  # nothing to end: a traceback from the pool's wait for work would be all it prints
    if not _armed:

        timer = threading.Timer(GRACE_S, _give_up, (signum,))
        timer.daemon = True
        timer.start()
        _armed.append(timer)
    raise Terminated(signum)


def interrupt_on_termination() -> None:
    """From now on SIGTERM and SIGHUP raise :class:`Terminated` in the main thread (nothing elsewhere: a signal
    handler can only be set there). A signal the parent set to be ignored (``nohup``) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in HANDLED:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _raise)


def exit_when_idle() -> None:
    """In a pool's worker process: a termination signal that arrives while no task runs (:func:`busy`) ends the
    process at once and quietly. Raised there, it would end the pool's wait for work with a traceback."""
    _worker["idle_exit"] = True


@contextlib.contextmanager
def busy():
    """A task runs: a termination signal is raised as :class:`Terminated` in it, so its runs and trials end marked."""
    _worker["busy"] += 1
    try:
        yield
    finally:
        _worker["busy"] -= 1


def describe(exc: KeyboardInterrupt) -> tuple[str, int]:
    """(what interrupted, the exit code a shell expects: 128 + the signal's number)."""
    if isinstance(exc, Terminated):
        return signal.Signals(exc.signum).name, 128 + exc.signum
    return "Ctrl-C", 130
