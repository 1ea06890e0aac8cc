"""Long work that shows itself: a progress bar over an index build (items done of total, and the LLM calls it
makes where it makes any), or a one-line "up to date" when there is nothing to build.

Everything goes to stderr (stdout stays the command's result, e.g. ``hublab index``'s stats JSON), and only when
the caller asks for it (``progress``): the CLI asks when stderr is a terminal or ``--progress`` is given, tests and
``--no-progress`` see nothing. A rich bar on a non-terminal still prints its last frame when it stops, so a
disabled bar is not drawn at all rather than drawn on a file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: advance(items done since the last call, llm_calls=LLM calls made since the last call)
Advance = Callable[..., None]


def _console(console: Any = None) -> Any:
    if console is not None:
        return console
    from rich.console import Console

    return Console(stderr=True)


@contextmanager
def build_bar(enabled: bool, what: str, total: int, *, unit: str = "items", llm_calls: int = 0,
              console: Any = None) -> Iterator[Advance]:
    """A bar ``<what>: <done>/<total> <unit>`` (with ``LLM calls <made>/<llm_calls>`` when the build makes LLM
    calls) while the body runs; yields ``advance``. Disabled, it draws nothing and ``advance`` does nothing."""
    if not enabled:
        yield lambda n=1, llm_calls=0: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns: list[Any] = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TextColumn(unit)]
    if llm_calls:
        columns.append(TextColumn("· LLM calls {task.fields[llm]}/" + f"{llm_calls:,}"))
    columns += [TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=_console(console)) as bar:
        task = bar.add_task(what, total=total, llm=0)
        made = [0]

        def advance(n: int = 1, llm_calls: int = 0) -> None:
            made[0] += llm_calls
            bar.update(task, advance=n, llm=made[0])

        yield advance


def up_to_date(enabled: bool, what: str, where: str, *, console: Any = None) -> None:
    """Say that an index needs no work (instead of a bar at "0 of N"), naming where it is."""
    if enabled:
        _console(console).print(f"{what} up to date ({where})", highlight=False, soft_wrap=True)


def note(enabled: bool, text: str, *, console: Any = None) -> None:
    """One line on stderr before long work starts (what it will cost), when progress is shown."""
    if enabled:
        _console(console).print(text, highlight=False, soft_wrap=True)


def want_progress(flag: bool | None) -> bool:
    """``--progress/--no-progress`` given: that; not given: whether stderr is a terminal (a person watching)."""
    if flag is not None:
        return flag
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _BytesBar:
    """A started rich bar over a byte count (reading a large file); ``update(pos)``, then ``close()``."""

    def __init__(self, what: str, total: int, console: Any = None) -> None:
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
                                  TimeRemainingColumn(), console=_console(console))
        self._task = self._progress.add_task(what, total=total)
        self._progress.start()

    def update(self, pos: int) -> None:
        self._progress.update(self._task, completed=pos)

    def close(self) -> None:
        self._progress.stop()


def bytes_bar(what: str, total: int, *, console: Any = None) -> _BytesBar:
    """A bar over ``total`` bytes, started (the caller decided that progress is shown)."""
    return _BytesBar(what, total, console)
