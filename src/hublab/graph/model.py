"""ORKG-style triple model and the canonical triple string used by datasets, contexts and metrics.

The thesis renders a triple as ``(<subjId>:<subject label>, <predicate label>, <objId>:<object label>)``;
metric matching compares these strings, so rendering must be exact and parsing must invert it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: the type every literal node carries (rdflib-free here: ``hublab.graph.base`` and what imports only it, such as
#: training, must load where rdflib is not installed)
LITERAL_CLASS = "Literal"
_HEAD_RE = re.compile(r"^\(([RLPC]\d+):")
# A node reference inside a triple string: ", <ORKG id>:" (resources R…, literals L…, classes C…).
_NODE_REF_RE = re.compile(r", ([RLPC]\d+):")


@dataclass(frozen=True)
class Knowledge:
    """A graph node (resource or literal) with its ORKG id, label and ORKG classes."""

    uid: str
    text: str
    types: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_literal(self) -> bool:
        return self.uid.startswith("L") or LITERAL_CLASS in self.types

    def render(self) -> str:
        return f"{self.uid}:{self.text}"


@dataclass(frozen=True)
class Triple:
    """A statement (subject, predicate label, object). Predicate ids are kept when known."""

    subject: Knowledge
    predicate: str
    object: Knowledge
    predicate_id: str | None = None

    def render(self) -> str:
        """The thesis's canonical string, e.g. ``(R1:Paper, venue, R2:ICSA)``."""
        return f"({self.subject.render()}, {self.predicate}, {self.object.render()})"

    def __str__(self) -> str:  # pragma: no cover - convenience
        return self.render()

    def label_key(self) -> tuple[str, str, str]:
        """(subject label, predicate, object label): identity with ids ignored."""
        return (self.subject.text, self.predicate, self.object.text)


@dataclass(frozen=True)
class ParsedTriple:
    """A triple string split into its parts (ids may be empty when a side carries no id)."""

    subject_id: str
    subject_label: str
    predicate: str
    object_id: str
    object_label: str

    def render(self) -> str:
        return (
            f"({self.subject_id}:{self.subject_label}, {self.predicate}, "
            f"{self.object_id}:{self.object_label})"
        )


class TripleParseError(ValueError):
    """A triple string is not of the form ``(id:label, predicate, id:label)``."""


def parse_triple_string(text: str) -> ParsedTriple:
    """Parse ``(R1:subject label, predicate, L2:object label)``.

    Labels may themselves contain commas and colons (paper titles do), so we anchor on the leading
    subject id and on the *last* ``, <id>:`` occurrence for the object, and take the predicate as the
    text between the first ``, `` after the subject and that object marker whose remainder parses.
    """
    s = text.strip()
    if not (s.startswith("(") and s.endswith(")")):
        raise TripleParseError(f"expected '(id:label, predicate, id:label)', got {text!r}")
    head = _HEAD_RE.match(s)
    if not head:
        raise TripleParseError(f"missing subject id in {text!r}")
    subject_id = head.group(1)
    body = s[head.end() : -1]  # "subject label, predicate, OID:object label"
    candidates = list(_NODE_REF_RE.finditer(body))
    if not candidates:
        raise TripleParseError(f"missing object id in {text!r}")
    # Choose the object marker: the last ", <id>:" whose preceding text contains ", " (the predicate split).
    for m in reversed(candidates):
        left = body[: m.start()]
        if ", " not in left:
            continue
        subject_label, predicate = left.rsplit(", ", 1)
        object_id = m.group(1)
        object_label = body[m.end() :]
        return ParsedTriple(subject_id, subject_label, predicate, object_id, object_label)
    raise TripleParseError(f"cannot split subject/predicate in {text!r}")
