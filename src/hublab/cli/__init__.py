"""``hublab`` command line: a thin layer. Each module here attaches its commands to the typer apps in
:mod:`hublab.cli.app`, parses options, calls one library function and prints; modules import heavy
libraries lazily so ``hublab --help`` stays fast."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from typing import TextIO

from hublab.env import apply_offline_defaults, quick_start_gc, quiet_cli

quick_start_gc()  # before the imports and the graph: few collections until the run settles (hublab.env)
apply_offline_defaults()
quiet_cli()  # library log noise off, once, before any heavy import (hublab.env.CLI_QUIET_DEFAULTS)

from hublab.cli.app import app  # noqa: E402
from hublab.errors import HubLabError  # noqa: E402

#: the typer app, the console entry point, and the one way a HubLab error is printed
__all__ = ["app", "main", "report"]

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _mod not in ("app", "__main__"):
        importlib.import_module(f"{__name__}.{_mod}")


def main() -> None:
    from hublab.signals import interrupt_on_termination

    interrupt_on_termination()  # SIGTERM / SIGHUP end a run or a study as Ctrl-C does (run KILLED, resumable)
    from hublab.limits import limit_problems

    if problems := limit_problems():  # before any file is opened for writing (ulimit -f cut the MLflow store)
        report(HubLabError("\n".join(problems)))
        raise SystemExit(2)
    try:
        app()
    except SystemExit as exc:
        interrupted = _unreported_interrupt(exc)
        if interrupted is None:
            raise
        from hublab.signals import describe

        what, code = describe(interrupted)  # 143 for SIGTERM, 129 for SIGHUP (typer says 130 for any, silently)
        print(f"interrupted ({what}): stopped before any run started; rerun the same command", file=sys.stderr)
        raise SystemExit(code) from None
    except HubLabError as exc:
        report(exc)
        raise SystemExit(2) from exc
    except Exception as exc:
        from hublab.dburl import is_locked

        if not is_locked(exc):
            raise
        # a store locked by another process after the start's check (a run's answers are checkpointed)
        report(HubLabError(f"a database HubLab writes stayed locked by another process ({exc.__class__.__name__}: "
                           f"{str(getattr(exc, 'orig', exc)).splitlines()[0]}); what was done is kept: rerun the "
                           "same command once it is released"))
        raise SystemExit(2) from exc


def _unreported_interrupt(exc: SystemExit) -> KeyboardInterrupt | None:
    """The Ctrl-C, SIGTERM or SIGHUP that typer turned into a silent exit 130 (``raise Exit(130) from`` it): one that
    arrived where no command reports it (loading, checks, before a run). None when a command said it already (it
    exits with ``from None``) or the exit is not an interrupt's."""
    context = exc.__context__
    cause = getattr(context, "__cause__", None)
    if exc.code == 130 and isinstance(cause, KeyboardInterrupt):
        return cause
    return None


def report(exc: HubLabError, file: TextIO | None = None) -> None:
    """One ``error:`` line per problem, credentials masked (an error may quote a value the user typed)."""
    from hublab.redact import scrub

    for line in str(exc).splitlines() or [type(exc).__name__]:
        print(f"error: {scrub(line)}", file=file or sys.stderr)
