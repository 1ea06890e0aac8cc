"""The process's resource limits, checked when a command starts. Under ``ulimit -f`` a write past the limit cut
the MLflow database mid-page (a damaged store every later run refused); under a low ``ulimit -n`` MLflow, Milvus
Lite and the model loaders failed in turn with tracebacks. A soft limit below what HubLab needs is raised (up to
the hard limit, as any process may); one the hard limit keeps too low is one line before any work. Also the bounds
on how far reading a graph may expand (:class:`ReadLimits`)."""

from __future__ import annotations

import resource
from dataclasses import dataclass
from typing import ClassVar

#: MLflow's store and its threads, Milvus Lite's segment files and gRPC sockets, model and graph files
MIN_OPEN_FILES = 256
WANT_OPEN_FILES = 4096
#: larger than any file HubLab writes (the MLflow database of a busy project is about 1 GB)
MIN_FILE_SIZE = 8 << 30


def _size(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else \
        f"{n >> 10} KiB"


def _raise_soft(kind: int, want: int) -> int:
    """The soft limit raised towards ``want`` (never past the hard limit); the limit in force afterwards."""
    soft, hard = resource.getrlimit(kind)
    inf = resource.RLIM_INFINITY
    target = want if hard == inf else min(want, hard) if want != inf else hard
    if soft != inf and (target == inf or soft < target):
        try:
            resource.setrlimit(kind, (target, hard))
            return target
        except (ValueError, OSError):
            return soft
    return soft


def limit_problems() -> list[str]:
    """Raise the open-file and file-size soft limits where they are too low; one line per limit still too low."""
    inf = resource.RLIM_INFINITY
    problems = []
    files = _raise_soft(resource.RLIMIT_NOFILE, WANT_OPEN_FILES)
    if files != inf and files < MIN_OPEN_FILES:
        problems.append(f"the open-file limit (ulimit -n) is {files} and the hard limit allows no more: HubLab needs "
                        f"at least {MIN_OPEN_FILES} (MLflow's store, Milvus Lite's files and sockets, the models); "
                        "raise it (ulimit -n 4096) and rerun")
    size = _raise_soft(resource.RLIMIT_FSIZE, inf)
    if size != inf and size < MIN_FILE_SIZE:
        problems.append(f"the file-size limit (ulimit -f) is {_size(size)} and the hard limit allows no more: a "
                        "write past it cuts HubLab's stores (the MLflow database, an index) mid-write and damages "
                        f"them; run with ulimit -f unlimited (or at least {_size(MIN_FILE_SIZE)})")
    return problems


#: below this many expanded bytes the expansion ratio is not judged (a tiny file may compress very well)
RATIO_FROM_BYTES = 1 << 20


@dataclass(frozen=True)
class ReadLimits:
    """How far a graph read may expand (``params.yaml: user_graphs.limits``): a small ``.gz`` file or a gzip-encoded
    endpoint answer can expand a thousandfold (memory and hours of parsing before any error), and rdflib's
    N-Triples reader holds a whole line in memory. Real RDF compresses about 5-30x; a bomb, thousands of times."""

    max_expanded_mb: float = 4096
    max_expansion_ratio: float = 100
    max_line_mb: float = 16

    KEYS: ClassVar[tuple[str, ...]] = ("max_expanded_mb", "max_expansion_ratio", "max_line_mb")

    @classmethod
    def from_params(cls, section: dict | None) -> ReadLimits:
        sec = dict(section or {})
        return cls(**{k: float(sec[k]) for k in cls.KEYS if sec.get(k) is not None})

    @property
    def max_line_chars(self) -> int:
        return int(self.max_line_mb * (1 << 20))

    def expansion_problem(self, expanded: int, compressed: int, *, cap_mb: float | None = None,
                          cap_key: str = "user_graphs.limits.max_expanded_mb",
                          ratio_key: str = "user_graphs.limits.max_expansion_ratio") -> str | None:
        """Why ``compressed`` bytes expanding to ``expanded`` bytes (so far) must stop, or None."""
        cap = self.max_expanded_mb if cap_mb is None else cap_mb
        if expanded > cap * (1 << 20):
            return (f"expands past {cap:g} MB (raise params.yaml: {cap_key} if this graph is really that "
                    "large)")
        if expanded >= RATIO_FROM_BYTES and expanded > self.max_expansion_ratio * max(compressed, 1):
            return (f"expands more than {self.max_expansion_ratio:g} times ({compressed:,} compressed bytes gave "
                    f"{expanded:,} so far: a decompression bomb? raise params.yaml: {ratio_key} if the graph is really "
                    "that repetitive)")
        return None
