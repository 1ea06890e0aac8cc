"""The vector index a Milvus server builds and searches with: ``vector_store.index`` of a pipeline YAML.

::

    vector_store:
      uri: http://127.0.0.1:19530
      index: {type: HNSW, M: 16, efConstruction: 200, ef: 64}   # or {type: IVF_FLAT, nlist: 128, nprobe: 16}
                                                                  # or {type: FLAT}; default {type: AUTOINDEX}

Build parameters (``M``, ``efConstruction``, ``nlist``) apply when a collection is created; search parameters
(``ef``, ``nprobe``) to every native search. Why checked here, not left to the server: a server refuses an index
type it does not know only *after* the collection exists (Milvus 2.3.5 creates the collection, then fails the
index: a collection without an index is left behind), and its message names neither the pipeline nor the field.
Ranges are Milvus's own (knowhere's config checks, the same in 2.3 and 2.4/2.5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hublab.errors import InputError

PREFIX = "vector_store.index"

#: index type → {parameter: (min, max, role)}; role "build" goes to the index, "search" to every search.
INDEX_TYPES: dict[str, dict[str, tuple[int, int, str]]] = {
    "AUTOINDEX": {},  # the server chooses (Milvus 2.3.5 standalone: HNSW); what today's code always used
    "FLAT": {},  # exact: brute force over the (filtered) rows
    "HNSW": {"M": (2, 2048, "build"), "efConstruction": (1, 2147483647, "build"), "ef": (1, 2147483647, "search")},
    "IVF_FLAT": {"nlist": (1, 65536, "build"), "nprobe": (1, 65536, "search")},
}


@dataclass(frozen=True)
class IndexSpec:
    type: str = "AUTOINDEX"
    build: dict[str, int] = field(default_factory=dict)
    search: dict[str, int] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        """FLAT is exhaustive: native results equal the exact mirror's (up to float32 vs float64 scores)."""
        return self.type == "FLAT"

    def search_params(self, limit: int) -> dict[str, Any]:
        """``search_params`` for pymilvus. HNSW's ``ef`` is raised to ``limit``: Milvus 2.3.5 accepts ef < limit
        (it searches with max(ef, limit)), some newer servers refuse it ("ef(…) should be larger than k(…)"); the
        effective ef is the same on both."""
        params = dict(self.search)
        if "ef" in params:
            params["ef"] = max(int(params["ef"]), int(limit))
        return {"params": params}

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.build, **self.search}


def index_problems(cfg: Any) -> list[tuple[str, str]]:
    """``[(field, problem)]`` for a ``vector_store.index`` value (empty when fine)."""
    if cfg is None:
        return []
    if not isinstance(cfg, dict):
        return [(PREFIX, f"expected a mapping like {{type: HNSW, M: 16}}, got {type(cfg).__name__} {cfg!r}"[:200])]
    kind = cfg.get("type", "AUTOINDEX")
    if not isinstance(kind, str) or kind.upper() not in INDEX_TYPES:
        return [(f"{PREFIX}.type", f"unknown index type {kind!r}; expected one of {sorted(INDEX_TYPES)}")]
    allowed = INDEX_TYPES[kind.upper()]
    out = []
    for key, value in cfg.items():
        if key == "type":
            continue
        if key not in allowed:
            expected = sorted(allowed) or "no parameters"
            out.append((f"{PREFIX}.{key}", f"not a parameter of a {kind.upper()} index; expected {expected}"))
            continue
        lo, hi, _ = allowed[key]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            out.append((f"{PREFIX}.{key}", f"expected an integer in [{lo}, {hi}], got {value!r}"))
    return out


def parse_index(cfg: Any) -> IndexSpec:
    """The checked ``IndexSpec`` of a ``vector_store.index`` value (None → AUTOINDEX); the first problem raises an
    ``InputError`` naming its field."""
    problems = index_problems(cfg)
    if problems:
        where, why = problems[0]
        raise InputError(why, field=where)
    cfg = dict(cfg or {})
    kind = str(cfg.pop("type", "AUTOINDEX")).upper()
    roles = INDEX_TYPES[kind]
    return IndexSpec(kind, {k: int(v) for k, v in cfg.items() if roles[k][2] == "build"},
                     {k: int(v) for k, v in cfg.items() if roles[k][2] == "search"})
