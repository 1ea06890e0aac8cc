"""``tune-all --jobs N``: the studies run at once, each in its own spawned job process, and stopped together.

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


def run_jobs(plans: list[MethodPlan], req: TuneAllRequest, st: Settings, jobs: int,
             on_method: Callable[[MethodOutcome], Any] | None) -> list[MethodOutcome]:
    """Every plan's study in a pool of ``jobs`` processes; ``on_method`` hears of each as it ends. Returns the
    outcomes in the order of ``plans``; the first study to fail cancels those not started and is raised."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    quiet = replace(req, progress=False, outcomes=[])  # one process's progress bar, not several interleaved
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_job_process_init) as pool:
        futures = {pool.submit(_job, plan, quiet, st): i for i, plan in enumerate(plans)}
        pending = set(futures)
        try:
            while pending:  # each study is reported when it ends (FIRST_EXCEPTION would wait for all of them)
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=futures.__getitem__):
                    if fut.exception() is not None:
                        for other in pending:
                            other.cancel()  # studies not started yet; running ones finish (their trials are saved)
                        raise fut.exception()  # type: ignore[misc]
                    if on_method is not None:
                        on_method(fut.result())
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the job processes end too, each marking its trial
            _stop_jobs(pool)
            raise
    return [fut.result() for fut in sorted(futures, key=futures.__getitem__)]


def _job(plan: MethodPlan, req: TuneAllRequest, st: Settings) -> MethodOutcome:
    """One study in a job process. Interrupted (its parent's SIGTERM, or its parent's death), the study's own
    handlers end its trial and runs first; then the process exits, instead of handing the interrupt back as the
    task's result and waiting for more work from a parent that may be gone."""
    from hublab.signals import busy

    try:
        with busy():
            return tune_method(plan, req, st, None)
    except KeyboardInterrupt as exc:
        from hublab.signals import describe

        os._exit(describe(exc)[1])


def _job_process_init() -> None:
    """A job process handles SIGTERM/SIGHUP as Ctrl-C (its running trial and study run end KILLED, not RUNNING), and
    on Linux is killed when the process that started it dies, even by ``kill -9`` (it held a Milvus Lite index for 17
    minutes after its parent was gone). SIGKILL, not SIGTERM: a process busy in C code (a model load, a locked
    database) runs no Python signal handler until it returns, and under load that was over a minute; a study whose
    worker vanished is recovered by its heartbeats (the trial failed and retried on the next start)."""
    import signal
    import sys

    from hublab.signals import exit_when_idle, interrupt_on_termination

    interrupt_on_termination()
    exit_when_idle()  # a job process still waiting for its study, or done with it, has nothing to mark
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _stop_jobs(pool: Any, timeout_s: float = 45.0) -> None:
    """SIGTERM to every job process, a bounded wait for each to mark its trial and exit, then SIGKILL to any still
    running (busy in C code, it never ran its handler): the command ends, and leaves no process behind."""
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
    pool.shutdown(wait=False, cancel_futures=True)
