"""STaRK semi-structured knowledge bases (SKB) and QA splits, read from the `stark-qa` on-disk layout.

Supported layout (docs/stark.md)::

    SKB_DIR/processed/            (or SKB_DIR itself)
        node_info.pkl             {node_id: {"type": ..., "name"|"title"|"DisplayName": ..., other fields}}
        node_types.pt             LongTensor [N]: type id per node
        node_type_dict.pkl        {type_id: type name}
        edge_index.pt             LongTensor [2, E]: source row, target row
        edge_types.pt             LongTensor [E]: edge type id per edge
        edge_type_dict.pkl        {edge_type_id: edge type name}
        skb_meta.json             optional: {"name": ..., "candidate_types": [...]}
    QA_DIR/stark_qa/stark_qa.csv  columns id, query, answer_ids ("[1, 2]")  (+ stark_qa_human_generated_eval.csv)
    QA_DIR/split/{train,val,test,test-0.1}.index   one query id per line

The SKB is wrapped as a :class:`KnowledgeGraph` (node id strings as uids, node type as class, edge type as
predicate) with CSR adjacency, so every retriever runs on it unchanged.
"""

from __future__ import annotations

import ast
import csv
import json
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hublab.errors import HubLabError, InputError
from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Knowledge, Triple

SKB_FILES = ("node_info.pkl", "node_types.pt", "node_type_dict.pkl", "edge_index.pt", "edge_types.pt",
             "edge_type_dict.pkl")
NAME_FIELDS = ("name", "title", "DisplayName", "brand_name", "category_name", "color_name")
# STaRK's candidate sets: Amazon→product, MAG→paper, Prime→every node.
DEFAULT_CANDIDATES = {"amazon": ["product"], "mag": ["paper"], "prime": None}
SPLITS = ("train", "val", "test", "test-0.1", "human_generated_eval")


def _load_tensor(path: Path) -> np.ndarray:
    if path.suffix == ".npy":
        return np.load(path)
    import torch

    return torch.load(path, map_location="cpu", weights_only=True).numpy()


def _find(dir_: Path, name: str) -> Path:
    for cand in (dir_ / name, dir_ / name.replace(".pt", ".npy")):
        if cand.exists():
            return cand
    raise InputError(f"missing SKB file {name} (expected the stark-qa 'processed' layout, see docs/stark.md)",
                     file=str(dir_ / name))


def processed_dir(skb_dir: str | Path) -> Path:
    d = Path(skb_dir)
    if (d / "processed" / "node_info.pkl").exists():
        return d / "processed"
    if (d / "node_info.pkl").exists():
        return d
    raise InputError("not a STaRK SKB directory: no processed/node_info.pkl (see docs/stark.md)", file=str(d))


class SkbKnowledgeGraph(KnowledgeGraph):
    """A STaRK SKB as a KnowledgeGraph. ``answers_with_nodes`` makes retrievers answer with node ids."""

    answers_with_nodes = True

    def __init__(
        self,
        node_info: dict[int, dict[str, Any]],
        node_types: np.ndarray,
        node_type_dict: dict[int, str],
        edge_index: np.ndarray,
        edge_types: np.ndarray,
        edge_type_dict: dict[int, str],
        *,
        name: str = "skb",
        candidate_types: list[str] | None = None,
    ) -> None:
        self.name = name
        self.node_info = node_info
        self.node_type_ids = np.asarray(node_types, dtype=np.int64)
        self.node_type_dict = {int(k): str(v) for k, v in node_type_dict.items()}
        self.edge_type_dict = {int(k): str(v) for k, v in edge_type_dict.items()}
        self.candidate_types = candidate_types
        n = len(self.node_type_ids)
        ei = np.asarray(edge_index, dtype=np.int64).reshape(2, -1)
        et = np.asarray(edge_types, dtype=np.int64).reshape(-1)
        if ei.shape[1] != et.shape[0]:
            raise InputError(f"edge_index has {ei.shape[1]} edges but edge_types {et.shape[0]}", field="edge_types")
        if ei.size and (ei.min() < 0 or ei.max() >= n):
            raise InputError(f"edge_index refers to nodes outside 0..{n - 1}", field="edge_index")
        self._src, self._dst, self._et = ei[0], ei[1], et
        self._out_order = np.argsort(self._src, kind="stable")
        self._in_order = np.argsort(self._dst, kind="stable")
        self._out_ptr = np.searchsorted(self._src[self._out_order], np.arange(n + 1))
        self._in_ptr = np.searchsorted(self._dst[self._in_order], np.arange(n + 1))
        self._knowledge: dict[int, Knowledge] = {}
        self._by_type: dict[str, list[Knowledge]] | None = None

    # ---------------- loading
    @classmethod
    def load(cls, skb_dir: str | Path, *, candidate_types: list[str] | None = None) -> SkbKnowledgeGraph:
        pdir = processed_dir(skb_dir)
        with _find(pdir, "node_info.pkl").open("rb") as fh:
            node_info = pickle.load(fh)  # noqa: S301 - a local dataset the user chose (docs/stark.md)
        with _find(pdir, "node_type_dict.pkl").open("rb") as fh:
            ntd = pickle.load(fh)  # noqa: S301
        with _find(pdir, "edge_type_dict.pkl").open("rb") as fh:
            etd = pickle.load(fh)  # noqa: S301
        meta: dict[str, Any] = {}
        if (pdir / "skb_meta.json").exists():
            meta = json.loads((pdir / "skb_meta.json").read_text(encoding="utf-8"))
        root = pdir.parent if pdir.name == "processed" else pdir
        name = str(meta.get("name") or root.name)
        if candidate_types is None:
            candidate_types = meta.get("candidate_types", DEFAULT_CANDIDATES.get(name.lower()))
        return cls(
            node_info,
            _load_tensor(_find(pdir, "node_types.pt")),
            ntd,
            _load_tensor(_find(pdir, "edge_index.pt")),
            _load_tensor(_find(pdir, "edge_types.pt")),
            etd,
            name=name,
            candidate_types=candidate_types,
        )

    # ---------------- nodes
    def _idx(self, uid: str) -> int | None:
        try:
            i = int(uid)
        except (TypeError, ValueError):
            return None
        return i if 0 <= i < len(self.node_type_ids) else None

    def type_name(self, i: int) -> str:
        return self.node_type_dict.get(int(self.node_type_ids[i]), str(int(self.node_type_ids[i])))

    def _info(self, i: int) -> dict[str, Any]:
        info = self.node_info.get(i, self.node_info.get(str(i), {}))  # type: ignore[call-overload]
        return info if isinstance(info, dict) else {"name": str(info)}

    def _know(self, i: int) -> Knowledge:
        k = self._knowledge.get(i)
        if k is None:
            info = self._info(i)
            label = next((str(info[f]) for f in NAME_FIELDS if info.get(f)), f"node {i}")
            k = Knowledge(str(i), label, (self.type_name(i),))
            self._knowledge[i] = k
        return k

    def entity(self, uid: str) -> Knowledge | None:
        i = self._idx(uid)
        return None if i is None else self._know(i)

    def document(self, uid: str, max_chars: int = 2000) -> str | None:
        """The node's own text (STaRK ``get_doc_info`` without relations): type, name, other fields."""
        i = self._idx(uid)
        if i is None:
            return None
        info = self._info(i)
        k = self._know(i)
        parts = [f"{k.types[0]}: {k.text}"]
        for key, val in info.items():
            if key in NAME_FIELDS or key == "type" or val in (None, "", [], {}):
                continue
            parts.append(f"{key}: {_flatten(val)}")
        return "\n".join(parts)[:max_chars]

    def node_types(self) -> list[str]:
        return sorted(set(self.node_type_dict.values()))

    def edge_types(self) -> list[str]:
        return sorted(set(self.edge_type_dict.values()))

    def entities_by_type(self, type_name: str) -> list[Knowledge]:
        if self._by_type is None:
            self._by_type = {}
            for i in range(len(self.node_type_ids)):
                self._by_type.setdefault(self.type_name(i), []).append(self._know(i))
        return list(self._by_type.get(type_name, []))

    def entities(self) -> Iterator[Knowledge]:
        for i in range(len(self.node_type_ids)):
            yield self._know(i)

    # ---------------- edges
    def _triple(self, e: int) -> Triple:
        et = int(self._et[e])
        pred = self.edge_type_dict.get(et, str(et))
        return Triple(self._know(int(self._src[e])), pred, self._know(int(self._dst[e])))

    def outgoing(self, uid: str) -> list[Triple]:
        i = self._idx(uid)
        if i is None:
            return []
        return [self._triple(int(e)) for e in self._out_order[self._out_ptr[i] : self._out_ptr[i + 1]]]

    def incoming(self, uid: str) -> list[Triple]:
        i = self._idx(uid)
        if i is None:
            return []
        return [self._triple(int(e)) for e in self._in_order[self._in_ptr[i] : self._in_ptr[i + 1]]]

    def triples(self) -> Iterator[Triple]:
        for e in range(len(self._et)):
            yield self._triple(e)

    def __len__(self) -> int:
        return int(len(self._et))

    def sparql(self, query: str) -> list[dict[str, str]]:
        raise HubLabError("SPARQL is not available on a STaRK SKB (it is not an RDF graph)")


def _flatten(val: Any, limit: int = 600) -> str:
    if isinstance(val, dict):
        s = "; ".join(f"{k}: {_flatten(v, limit)}" for k, v in val.items())
    elif isinstance(val, list | tuple):
        s = ", ".join(_flatten(v, limit) for v in val)
    else:
        s = str(val)
    return s[:limit]


# ---------------------------------------------------------------- QA
@dataclass
class StarkQuery:
    qid: int
    query: str
    answer_ids: list[int]


def _parse_ids(raw: str, file: str, row: int) -> list[int]:
    try:
        val = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        raise InputError(f"answer_ids is not a list of ints: {raw[:60]!r}", file=file, row=row,
                         field="answer_ids") from None
    if isinstance(val, int):
        val = [val]
    if not isinstance(val, list | tuple) or not all(isinstance(v, int) for v in val):
        raise InputError(f"answer_ids is not a list of ints: {raw[:60]!r}", file=file, row=row, field="answer_ids")
    return [int(v) for v in val]


def load_qa(qa_dir: str | Path, split: str = "test") -> list[StarkQuery]:
    """Queries of one split, in the split file's order (``human_generated_eval``: the human CSV)."""
    d = Path(qa_dir)
    if split not in SPLITS:
        raise InputError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}", field="split")
    name = "stark_qa_human_generated_eval.csv" if split == "human_generated_eval" else "stark_qa.csv"
    csv_path = d / "stark_qa" / name
    if not csv_path.exists():
        raise InputError("QA file not found (see docs/stark.md for the layout)", file=str(csv_path))
    rows: dict[int, StarkQuery] = {}
    with csv_path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {"id", "query", "answer_ids"} - set(reader.fieldnames or [])
        if missing:
            raise InputError(f"missing columns {sorted(missing)}", file=str(csv_path), row=0)
        for n, rec in enumerate(reader, start=1):
            try:
                qid = int(rec["id"])
            except (TypeError, ValueError):
                raise InputError(f"id is not an int: {rec['id']!r}", file=str(csv_path), row=n, field="id") from None
            rows[qid] = StarkQuery(qid, rec["query"] or "", _parse_ids(rec["answer_ids"] or "", str(csv_path), n))
    if split == "human_generated_eval":
        return [rows[k] for k in sorted(rows)]
    idx_path = d / "split" / f"{split}.index"
    if not idx_path.exists():
        raise InputError("split index file not found", file=str(idx_path))
    out: list[StarkQuery] = []
    for n, line in enumerate(idx_path.read_text(encoding="utf-8").split(), start=1):
        try:
            qid = int(line)
        except ValueError:
            raise InputError(f"not a query id: {line!r}", file=str(idx_path), row=n) from None
        if qid not in rows:
            raise InputError(f"query id {qid} is not in {csv_path.name}", file=str(idx_path), row=n)
        out.append(rows[qid])
    return out
