"""Read-only client for the ORKG REST API (``/api/papers``, ``/api/statements/{id}/bundle``).

The thesis read the sandbox ORKG through this REST API (§7.3), because the ``orkg`` Python package was
incomplete. Response shapes follow the ORKG backend's representations:

- paged lists: ``{"content": [...], "page": {"number", "size", "total_elements", "total_pages"}}`` (older
  servers: ``totalPages``/``last`` at top level; both are understood);
- a bundle: ``{"root": id, "statements": [{"id", "subject", "predicate", "object", "created_at", ...}]}``;
- things carry ``_class`` = ``resource`` (``id``, ``label``, ``classes``), ``literal`` (``id``, ``label``,
  ``datatype``), ``predicate`` (``id``, ``label``) or ``class`` (``id``, ``label``, ``uri``).

Resources keep their ORKG classes as :class:`~hublab.graph.model.Knowledge` types; literals, predicates and
classes used as objects get no types (as in the ORKG export). Predicate ids are kept on the triple.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import requests

from hublab.errors import HubLabError
from hublab.graph.model import Knowledge, Triple

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class OrkgApiError(HubLabError):
    """The ORKG API could not be read (network failure after retries, HTTP error, unexpected JSON)."""


@dataclass
class OrkgClient:
    """Small, retrying ORKG REST client. Pass ``session`` to reuse connections or to inject a test adapter."""

    base_url: str = "https://sandbox.orkg.org"
    timeout_s: float = 30.0
    page_size: int = 100
    retries: int = 4
    backoff_s: float = 1.0
    session: requests.Session = field(default_factory=requests.Session)
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")

    # ---------------- transport ----------------
    def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET ``base_url + path`` as JSON; retries connection errors, timeouts, 429 and 5xx with backoff."""
        url = f"{self.base_url}{path}"
        last: str = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                resp = self.session.get(
                    url, params=params, timeout=self.timeout_s, headers={"Accept": "application/json"}
                )
            except (requests.ConnectionError, requests.Timeout) as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if resp.status_code in RETRY_STATUS:
                last = f"HTTP {resp.status_code}"
                continue
            if resp.status_code >= 400:
                raise OrkgApiError(f"GET {resp.url} failed: HTTP {resp.status_code}: {_error_message(resp)}")
            try:
                return resp.json()
            except ValueError as exc:
                raise OrkgApiError(f"GET {resp.url}: response is not JSON ({exc})") from exc
        raise OrkgApiError(f"GET {url} failed after {self.retries + 1} attempts (last error: {last})")

    # ---------------- endpoints ----------------
    def iter_pages(self, path: str, params: dict[str, Any] | None = None) -> Iterator[dict]:
        """Every element of a paged list endpoint, page by page (``page``/``size`` request parameters)."""
        page = 0
        while True:
            body = self.get_json(path, {**(params or {}), "page": page, "size": self.page_size})
            if not isinstance(body, dict) or not isinstance(body.get("content"), list):
                raise OrkgApiError(f"GET {path} page {page}: expected a paged object with a 'content' list")
            yield from body["content"]
            if _is_last_page(body, page, self.page_size):
                return
            page += 1

    def research_field_papers(self, research_field: str) -> list[dict]:
        """The papers of a research field (``GET /api/papers?research_field=…``), in server order."""
        return list(self.iter_pages("/api/papers", {"research_field": research_field}))

    def bundle(
        self,
        thing_id: str,
        *,
        max_level: int | None = None,
        blacklist: tuple[str, ...] = (),
        include_first: bool = True,
    ) -> list[dict]:
        """The statements of the subgraph below ``thing_id`` (``GET /api/statements/{id}/bundle``)."""
        params: dict[str, Any] = {"includeFirst": str(include_first).lower()}
        if max_level is not None:
            params["maxLevel"] = max_level
        if blacklist:
            params["blacklist"] = ",".join(blacklist)
        body = self.get_json(f"/api/statements/{thing_id}/bundle", params)
        if not isinstance(body, dict) or not isinstance(body.get("statements"), list):
            raise OrkgApiError(f"bundle of {thing_id}: expected {{'root', 'statements': [...]}}")
        return body["statements"]

    def paper_statements(self, paper_id: str, *, stop_classes: tuple[str, ...] = ("ResearchField",)) -> list[dict]:
        """All statements of a paper's subgraph, not descending into ``stop_classes`` nodes.

        The bundle blacklist drops every statement touching a blacklisted class, which would also drop
        ``(paper, research field, RF)``; the first-level bundle adds those direct statements back.
        """
        deep = self.bundle(paper_id, blacklist=stop_classes)
        first = self.bundle(paper_id, max_level=1)
        seen: set[str] = set()
        out: list[dict] = []
        for st in first + deep:
            sid = st.get("id") if isinstance(st, dict) else None
            key = sid if isinstance(sid, str) else repr(st)
            if key not in seen:
                seen.add(key)
                out.append(st)
        return out


# ---------------- conversion ----------------
def thing_to_knowledge(thing: Any, *, where: str) -> Knowledge:
    """An ORKG thing representation as a :class:`Knowledge` (resources keep their classes as types)."""
    if not isinstance(thing, dict):
        raise OrkgApiError(f"{where}: expected an object, got {type(thing).__name__}")
    uid, label = thing.get("id"), thing.get("label")
    if not isinstance(uid, str) or not uid:
        raise OrkgApiError(f"{where}: missing 'id'")
    if not isinstance(label, str):
        raise OrkgApiError(f"{where}: missing 'label' of {uid}")
    kind = thing.get("_class")
    types: tuple[str, ...] = ()
    if kind == "resource":
        classes = thing.get("classes") or []
        if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
            raise OrkgApiError(f"{where}: 'classes' of {uid} must be a list of class ids")
        types = tuple(sorted(classes))
    elif kind not in ("literal", "predicate", "class"):
        raise OrkgApiError(f"{where}: unknown _class {kind!r} of {uid}")
    return Knowledge(uid, label, types)


def statement_to_triple(st: Any, *, where: str = "statement") -> Triple:
    """An ORKG statement representation as a :class:`Triple` carrying the predicate id."""
    if not isinstance(st, dict):
        raise OrkgApiError(f"{where}: expected an object")
    where = f"{where} {st.get('id', '?')}"
    pred = st.get("predicate")
    if not isinstance(pred, dict) or not isinstance(pred.get("label"), str) or not isinstance(pred.get("id"), str):
        raise OrkgApiError(f"{where}: 'predicate' needs 'id' and 'label'")
    return Triple(
        thing_to_knowledge(st.get("subject"), where=f"{where}.subject"),
        pred["label"],
        thing_to_knowledge(st.get("object"), where=f"{where}.object"),
        pred["id"],
    )


def _is_last_page(body: dict, page: int, size: int) -> bool:
    meta = body.get("page")
    if isinstance(meta, dict) and isinstance(meta.get("total_pages"), int):
        return page + 1 >= meta["total_pages"]
    if isinstance(body.get("last"), bool):
        return body["last"]
    if isinstance(body.get("totalPages"), int):
        return page + 1 >= body["totalPages"]
    return len(body["content"]) < size


def _error_message(resp: requests.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:200]
    if isinstance(body, dict):
        return str(body.get("message") or body.get("error") or body)[:200]
    return str(body)[:200]
