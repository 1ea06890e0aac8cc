"""``tune-all --jobs N``: the studies run at once in spawned job processes (a method's studies in one), and stopped
together.

The process target (``_job``) and initializer (``_job_process_init``) are module-level functions: a spawned process
finds them by importing this module."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hublab.config import Settings
from hublab.tuning._fair_method import tune_method
from hublab.tuning._fair_types import MethodOutcome, MethodPlan, TuneAllRequest


def run_jobs(groups: list[list[tuple[MethodPlan, TuneAllRequest]]], st: Settings, jobs: int,
             on_method: Callable[[int, int, MethodOutcome], Any] | None) -> list[list[MethodOutcome]]:
    """Every group of studies in one pool of ``jobs`` processes, a group's studies one after another in one
    process, the groups taken in the order given; ``on_method(g, j, outcome)`` hears of group ``g``'s ``j``-th study
    as it ends. Returns each group's outcomes in its order; the first study to fail cancels the groups not started
    and is raised.

    A group is one method's studies (its folds, in a comparison): a method's Milvus Lite index can be open in one
    process only, and a job process keeps what it opened for its next study."""
    import multiprocessing
    import queue as queues
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")
    said: Any = ctx.Queue()  # (group, position, outcome) of each study as it ends, from the job processes

    def hear() -> None:
        while True:
            try:
                g, j, outcome = said.get_nowait()
            except queues.Empty:
                return
            if on_method is not None:
                on_method(g, j, outcome)

    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_job_process_init,
                             initargs=(said,)) as pool:
        # one process's progress bar, not several interleaved
        futures = {pool.submit(_job, g, [(plan, replace(req, progress=False, outcomes=[])) for plan, req in group],
                               st): g for g, group in enumerate(groups)}
        pending = set(futures)
        try:
            while pending:  # each study is reported when it ends (FIRST_EXCEPTION would wait for all of them)
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                hear()
                for fut in sorted(done, key=futures.__getitem__):
                    if fut.exception() is not None:
                        for other in pending:
                            other.cancel()  # groups not started yet; running ones finish (their trials are saved)
                        raise fut.exception()  # type: ignore[misc]
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the job processes end too, each marking its trial
            _stop_jobs(pool)
            raise
    hear()
    return [fut.result() for fut in sorted(futures, key=futures.__getitem__)]


#: the queue a job process tells its parent of each study's end through (set by ``_job_process_init``)
_SAID: Any = None


def _job(g: int, group: list[tuple[MethodPlan, TuneAllRequest]], st: Settings) -> list[MethodOutcome]:
    """One group's studies in a job process, one after another, each told to the parent as it ends. Interrupted
    (its parent's SIGTERM, or its parent's death), the study's own handlers end its trial and runs first; then the
    process exits, instead of handing the interrupt back as the task's result and waiting for more work from a
    parent that may be gone."""
    from hublab.signals import busy

    outcomes = []
    try:
        with busy():
            for j, (plan, req) in enumerate(group):
                outcomes.append(tune_method(plan, req, st, None))
                if _SAID is not None:
                    _SAID.put((g, j, outcomes[-1]))
        return outcomes
    except KeyboardInterrupt as exc:
        from hublab.signals import describe

        os._exit(describe(exc)[1])


def _job_process_init(said: Any = None) -> None:
    """A job process handles SIGTERM/SIGHUP as Ctrl-C (its running trial and study run end KILLED, not RUNNING), and
    on Linux is killed when the process that started it dies, even by ``kill -9`` (it held a Milvus Lite index for 17
    minutes after its parent was gone). SIGKILL, not SIGTERM: a process busy in C code (a model load, a locked
    database) runs no Python signal handler until it returns, and under load that was over a minute; a study whose
    worker vanished is recovered by its heartbeats (the trial failed and retried on the next start). ``said``: the
    queue each study's end is told through."""
    import signal
    import sys

    from hublab.signals import exit_when_idle, interrupt_on_termination

    global _SAID
    _SAID = said

    interrupt_on_termination()
    exit_when_idle()  # a job process still waiting for its study, or done with it, has nothing to mark
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _stop_jobs(pool: Any, timeout_s: float = 45.0) -> None:
    """SIGTERM to every job process, a bounded wait for each to mark its trial and exit, then SIGKILL to any still
    running (busy in C code, it never ran its handler): the command ends, and leaves no process behind.

    The executor's manager thread is joined before returning. Left running, it closes its wake-up pipe when it sees
    the dead processes, and on Python 3.11 that races with the interpreter's exit hook writing to the same pipe:
    ``OSError: Bad file descriptor`` printed with a traceback after the one-line message (a fresh-clone CI caught it).
    Once the thread has ended, the pipe is marked closed and the exit hook skips it."""
    import signal

    procs = list(getattr(pool, "_processes", {}).values())  # noqa: SLF001 - the executor has no public handle
    for proc in procs:
        if proc.is_alive():
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            import sys

            print(f"job process {proc.pid} did not stop within {timeout_s:.0f} s: killed; its running trial is failed "
                  "and retried when the study next starts (heartbeats)", file=sys.stderr)
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.join(5.0)
    manager = getattr(pool, "_executor_manager_thread", None)  # noqa: SLF001 - shutdown(wait=False) forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    if manager is not None:
        manager.join(10.0)  # its processes are gone: it ends at once (bounded all the same)
