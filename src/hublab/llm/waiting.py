"""A line on stderr while an LLM call waits: an endpoint that hangs made questions take minutes with nothing printed,
which looks like a hung run. After ``NOTICE_S`` without an answer the call says what it waits for and when it gives
up (its bound: ``timeout_s`` x attempts), then again every ``REPEAT_S``; calls running at once (HubLink's parallel
partial answers) share one line per endpoint and interval."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator

NOTICE_S = 15.0
REPEAT_S = 60.0
_LOCK = threading.Lock()
_LAST: dict[str, float] = {}  # what is waited for -> when its last line was printed


def _say(what: str, waited: float, bound_s: float) -> None:
    now = time.monotonic()
    with _LOCK:
        if now - _LAST.get(what, float("-inf")) < min(NOTICE_S, REPEAT_S) * 0.9:
            return  # another call to the same endpoint said it just now
        _LAST[what] = now
    print(f"waiting for {what}: no answer after {waited:.0f} s; the call gives up after {bound_s:.0f} s "
          "(llm.timeout_s x (max_retries + 1)) and the question records the error", file=sys.stderr, flush=True)


@contextlib.contextmanager
def waiting_notice(what: str, bound_s: float) -> Iterator[None]:
    """Print the waiting line for the block (an LLM call) if it runs longer than ``NOTICE_S``."""
    done = threading.Event()
    start = time.monotonic()

    def watch() -> None:
        wait = NOTICE_S
        while not done.wait(wait):
            _say(what, time.monotonic() - start, bound_s)
            wait = REPEAT_S

    watcher = threading.Thread(target=watch, name="llm-waiting-notice", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
