"""Literals whose text does not fit their datatype (``"abc"^^xsd:integer``): rdflib keeps each as written and logs
a warning *with a traceback* for every one, so a graph with a thousand of them printed thousands of lines before a
run. While a graph is parsed (:func:`counted`) those records are held back and counted, and one warning line says
how many there were, in which graph, and the first datatype and reason."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator

#: the logger and the message rdflib uses for a lexical form its datatype's converter refuses
RDFLIB_LOGGER = "rdflib.term"
_MESSAGE = "Failed to convert Literal lexical form to value"
_DATATYPE = re.compile(r"Datatype=(\S+?),? ")

log = logging.getLogger(__name__)


class _Counter(logging.Filter):
    """Drops rdflib's ill-typed-literal records, remembering how many and the first one's datatype and reason."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.first = ""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not message.startswith(_MESSAGE):
            return True
        self.count += 1
        if not self.first:
            m = _DATATYPE.search(message + " ")
            reason = record.exc_info[1] if record.exc_info and record.exc_info[1] is not None else None
            said = " ".join(str(reason).split())[:80] if reason is not None else ""
            self.first = (m.group(1) if m else "its datatype") + (f": {said}" if said else "")
        return False


@contextlib.contextmanager
def counted(where: str) -> Iterator[None]:
    """Parse inside this block: rdflib's ill-typed-literal warnings become one ``warning:`` line naming ``where``."""
    logger = logging.getLogger(RDFLIB_LOGGER)
    counter = _Counter()
    logger.addFilter(counter)
    try:
        yield
    finally:
        logger.removeFilter(counter)
    if counter.count:
        log.warning("warning: %s: %d literal(s) do not fit their datatype (first: %s); each is kept as written",
                    where, counter.count, counter.first)
