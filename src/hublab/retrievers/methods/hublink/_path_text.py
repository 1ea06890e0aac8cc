"""PATHTOTEXT for the HubLink index (the thesis's Alg. 6): a path's text from the LLM, cached on disk by (model,
prompt version, path hash) so each is paid once per path and graph version, or the template verbaliser when
``llm_path_text`` is off or the LLM is the LLM-free stand-in. Apart from the index's store and manifest because the
retriever's answer step verbalises paths with the same cache."""

from __future__ import annotations

import hashlib
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hublab.atomic import write_text_atomic
from hublab.graph.model import Triple
from hublab.llm.base import LLM, llm_free
from hublab.retrievers.methods.hublink import prompts
from hublab.retrievers.methods.hublink.hubs import HubPath, path_hash
from hublab.retrievers.methods.hublink.text import ask, path_to_text, readable


class PathTexts:
    """The path verbaliser and its text cache (``hublink_pathtext_<model and prompt key>.json`` in ``cache_dir``)."""

    def __init__(self, llm: LLM | None, llm_path_text: bool, cache_dir: Path, *, workers: int) -> None:
        self.llm = llm
        self.workers = workers
        self.enabled = llm_path_text and not llm_free(llm)
        key = hashlib.sha256(f"{getattr(llm, 'model', '')}|{prompts.PATH_TO_TEXT_VERSION}".encode()).hexdigest()[:12]
        self.cache_path = cache_dir / f"hublink_pathtext_{key}.json"
        self._cache: dict[str, str] | None = None
        self._lock = threading.Lock()

    def cache(self) -> dict[str, str]:
        if self._cache is None:
            try:
                self._cache = json.loads(self.cache_path.read_text()) if self.cache_path.exists() else {}
            except (OSError, json.JSONDecodeError):
                self._cache = {}
        return self._cache

    def save(self) -> None:
        """Persist the LLM path texts (no-op without LLM PATHTOTEXT)."""
        if self._cache is None or not self.enabled:
            return
        with self._lock:
            blob = json.dumps(self._cache)
        write_text_atomic(self.cache_path, blob)

    def text(self, triples: tuple[Triple, ...] | list[Triple]) -> tuple[str, str | None]:
        """PATHTOTEXT for one triple path: (text, fallback reason or None). LLM texts are cached by path hash;
        a failed or empty LLM answer gives the template text (not cached, so a later run retries it)."""
        if not triples:
            return "", None
        if not self.enabled:
            return path_to_text(triples), None
        h = path_hash(triples)
        cache = self.cache()
        with self._lock:
            hit = cache.get(h)
        if hit:
            return hit, None
        r = ask(self.llm, prompts.PATH_TO_TEXT.format(path="\n".join(readable(t) for t in triples)),
                max_tokens=192)  # one or two sentences per path
        text = (r.text or "").strip() if r.error is None else ""
        if not text:
            return path_to_text(triples), str(r.error or "empty response")
        with self._lock:
            cache[h] = text
        return text, None

    def texts(self, paths: list[HubPath]) -> tuple[list[str], int]:
        """Every path's text (LLM calls in parallel) and how many fell back to the template; the cache saved after."""
        if not self.enabled or len(paths) <= 1:
            out = [self.text(p.triples) for p in paths]
        else:
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                out = list(pool.map(lambda p: self.text(p.triples), paths))
        if self.enabled:
            self.save()
        return [t for t, _ in out], sum(1 for _, f in out if f)

    def llm_calls_todo(self, changed: list[str], current: dict[str, list[HubPath]]) -> dict[str, int]:
        """hub -> the LLM PATHTOTEXT calls indexing it will make (paths of more than zero triples whose text is not
        cached; a path shared by two hubs counted once); empty without LLM path texts."""
        if not self.enabled or not changed:
            return {}
        cache = self.cache()
        seen: set[str] = set()
        out: dict[str, int] = {}
        for r in changed:
            n = 0
            for p in current[r]:
                if not p.triples:
                    continue
                h = path_hash(p.triples)
                if h not in cache and h not in seen:
                    seen.add(h)
                    n += 1
            out[r] = n
        return out
