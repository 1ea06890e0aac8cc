"""SIGTERM and SIGHUP end a command as Ctrl-C does: a service manager's stop, ``kill`` or a
closed terminal then leave what an interrupt leaves — the MLflow run marked KILLED, the checkpoint consistent with
its traces, a message saying how to resume — instead of a silent exit 143/129 with the run left RUNNING. The
signal is raised as :class:`Terminated`, a ``KeyboardInterrupt``, so every ``except KeyboardInterrupt`` and
``finally`` that already handles Ctrl-C handles it too."""

from __future__ import annotations

import contextlib
import signal
import threading
import time

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
#: the unraisable hook runs: a signal delivered meanwhile is delivered again, not raised (:func:`_redeliver`)
_in_hook = {"now": False}
#: blocks a termination signal must not cut (:func:`deferred`) open now, and the signal that arrived meanwhile
_deferral: dict[str, int | None] = {"depth": 0, "pending": None}


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
    if _in_hook["now"]:
        _deliver_later(signum)
        return
    if not _armed:
        timer = threading.Timer(GRACE_S, _give_up, (signum,))
        timer.daemon = True
        timer.start()
        _armed.append(timer)
    if _deferral["depth"]:
        _deferral["pending"] = signum  # raised when the block ends (its grace timer runs already)
        return
    raise Terminated(signum)


def _raise_pending() -> None:
    signum, _deferral["pending"] = _deferral["pending"], None
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    if signum is not None:
        raise Terminated(signum)


def _hold_interrupt(signum: int, _frame: object) -> None:
    """SIGINT's handler inside a :func:`deferred` block: Ctrl-C is kept for the block's end, as a termination is."""
    if _deferral["pending"] is None:
        _deferral["pending"] = signum


def _hold_ctrl_c(hold: bool) -> None:
    """Hold Ctrl-C (``hold``) or let it raise again, where SIGINT raises ``KeyboardInterrupt`` (Python's own
    handler): a handler a program set, or an ignored SIGINT, is left alone."""
    if hold and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _hold_interrupt)
    elif not hold and signal.getsignal(signal.SIGINT) is _hold_interrupt:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@contextlib.contextmanager
def deferred():
    """A block a termination signal or Ctrl-C must not cut in two (a study's trial created but not yet in its
    objective, or its result being stored: cut there, the trial stays RUNNING). A signal that arrives meanwhile is
    raised when the block ends, even if it ends by an exception (which becomes the signal's context). Only the main
    thread's blocks count: signals are raised nowhere else."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _deferral["depth"] += 1
    _hold_ctrl_c(True)
    try:
        yield
    finally:
        _deferral["depth"] -= 1
        if not _deferral["depth"]:
            _hold_ctrl_c(False)
            _raise_pending()


@contextlib.contextmanager
def undeferred():
    """Inside :func:`deferred`, a part that a signal may interrupt at once (a trial's objective, which marks its
    trial FAILED itself): one deferred so far is raised on entry."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    depth, _deferral["depth"] = _deferral["depth"], 0
    _hold_ctrl_c(False)
    try:
        _raise_pending()
        yield
    finally:
        _deferral["depth"] = depth
        _hold_ctrl_c(bool(depth))


def _deliver_later(signum: int) -> None:
    """Deliver ``signum`` to the main thread again from a helper thread, a moment from now: the main thread raises it
    at its next ordinary instruction (again later if that is still inside a finaliser)."""
    import _thread

    def again() -> None:
        time.sleep(0.01)
        _thread.interrupt_main(signum)

    threading.Thread(target=again, daemon=True, name="hublab-signal-again").start()


def _redeliver(unraisable: object) -> None:
    """``sys.unraisablehook``: a signal that arrived while Python ran a finaliser or a weakref callback (SQLAlchemy's
    state cleanup, during a garbage collection) raised :class:`Terminated` where Python cannot propagate it; it would
    print "Exception ignored" with a traceback and be lost, the command running on. It is delivered again."""
    exc = getattr(unraisable, "exc_value", None)
    if not isinstance(exc, Terminated):
        _previous_hook["hook"](unraisable)
        return
    _in_hook["now"] = True  # a delivery that lands while this hook runs would be lost in it too
    try:
        _deliver_later(exc.signum)
    finally:
        _in_hook["now"] = False


_previous_hook: dict[str, object] = {}


def interrupt_on_termination() -> None:
    """From now on SIGTERM and SIGHUP raise :class:`Terminated` in the main thread (nothing elsewhere: a signal
    handler can only be set there), one raised inside a finaliser included. A signal the parent set to be ignored
    (``nohup``) stays ignored."""
    import sys

    if threading.current_thread() is not threading.main_thread():
        return
    for sig in HANDLED:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _raise)
    if sys.unraisablehook is not _redeliver:
        _previous_hook["hook"] = sys.unraisablehook
        sys.unraisablehook = _redeliver


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
