"""Run identity: one hash over everything that changes a run's results.

A run's checkpoint (``outputs/runs/<run_id>/``) and MLflow run are keyed by this hash, so a different
question limit, graph file, dataset file, experiment or code version never resumes — or overwrites — another
run's results. A plugin method's code lives outside ``src/hublab``: its distribution, version and source files are
hashed too (a built-in method's identity has no plugin part, so installing a plugin never changes it).

``scope`` says how much of the dataset a run covers; partial runs carry it in their name, MLflow tags and report
headers and are never reported as full-benchmark results.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

SRC_ROOT = Path(__file__).resolve().parents[1]  # src/hublab


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes ("missing" when absent)."""
    if not path.exists():
        return "missing"
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@lru_cache(maxsize=4)
def src_tree_digest(root: str = str(SRC_ROOT)) -> str:
    """sha256 over the relative paths and bytes of every ``*.py`` file of the package (sorted), so the same
    code gives the same digest in any checkout, with or without git."""
    h = hashlib.sha256()
    base = Path(root)
    for p in sorted(base.rglob("*.py"), key=lambda q: q.relative_to(base).as_posix()):
        if "__pycache__" in p.parts:
            continue
        h.update(p.relative_to(base).as_posix().encode())
        h.update(b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def files_digest(paths: tuple[Path, ...]) -> str:
    """sha256 over the ``*.py`` files under each path (a folder, or one file), by relative path and bytes."""
    h = hashlib.sha256()
    for i, root in enumerate(paths):
        files = [root] if root.is_file() else sorted(
            (p for p in root.rglob("*.py") if "__pycache__" not in p.parts),
            key=lambda q: q.relative_to(root).as_posix())
        for p in files:
            h.update(f"{i}/{p.relative_to(root).as_posix() if p != root else p.name}".encode())
            h.update(b"\0")
            try:
                h.update(p.read_bytes())
            except OSError:  # an unreadable file still counts (as such), never a traceback mid-run
                h.update(b"<unreadable>")
            h.update(b"\0")
    return h.hexdigest()


def plugin_version(retriever_type: str) -> dict[str, str]:
    """``{"plugin": origin, "plugin_sha256": digest}`` of a plugin method's code; {} for a built-in method."""
    from hublab.retrievers.registry import plugin_code

    code = plugin_code(retriever_type)
    if code is None:
        return {}
    return {"plugin": code.origin, "plugin_sha256": files_digest(code.paths)}


def code_version() -> dict[str, str]:
    """Package version + a digest of the source tree (the digest is what the identity hashes: git HEAD is
    recorded as provenance only, because uncommitted edits change results without changing HEAD)."""
    try:
        from importlib.metadata import version

        pkg = version("hublab")
    except Exception:
        pkg = "unknown"
    return {"package": pkg, "src_sha256": src_tree_digest()}


def scope_text(n_run: int, n_total: int) -> str:
    return "full" if n_run >= n_total else f"{n_run} of {n_total} questions"


@dataclass(frozen=True)
class RunIdentity:
    config_hash: str
    graph: str
    graph_sha256: str
    dataset: str
    dataset_sha256: str
    limit: int | None
    n_questions: int
    n_total: int
    experiment: str
    package: str
    src_sha256: str
    #: a plugin method's ``distribution==version`` and source digest; None (and absent from the hash) for built-ins
    plugin: str | None = None
    plugin_sha256: str | None = None

    @property
    def full(self) -> bool:
        return self.n_questions >= self.n_total

    @property
    def scope(self) -> str:
        return scope_text(self.n_questions, self.n_total)

    def _fields(self) -> dict[str, Any]:
        """The hashed fields: a built-in method's run has no plugin keys, so its identity is what it always was."""
        d = asdict(self)
        for key in ("plugin", "plugin_sha256"):
            if d[key] is None:
                del d[key]
        return d

    @property
    def run_id(self) -> str:
        blob = json.dumps(self._fields(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def tags(self) -> dict[str, str]:
        plugin = {"hublab.plugin": self.plugin, "hublab.plugin_sha256": self.plugin_sha256} if self.plugin else {}
        return {"hublab.run_identity": self.run_id, "hublab.config_hash": self.config_hash,
                "hublab.graph_sha256": self.graph_sha256, "hublab.dataset_sha256": self.dataset_sha256,
                "hublab.limit": str(self.limit), "hublab.src_sha256": self.src_sha256,
                "hublab.version": self.package, "scope": self.scope, "hublab.full_run": str(self.full).lower(),
                **plugin}

    def as_dict(self) -> dict[str, Any]:
        return {**self._fields(), "run_identity": self.run_id, "scope": self.scope, "full": self.full}


def run_identity(config_hash: str, graph_digest: str, dataset_file: Path, *, graph: str, dataset: str,
                 limit: int | None, n_questions: int, n_total: int, experiment: str,
                 retriever_type: str | None = None) -> RunIdentity:
    code = code_version()
    plugin = plugin_version(retriever_type) if retriever_type is not None else {}
    # a limit that covers the whole dataset is the full run: same identity as no limit
    eff_limit = None if limit is None or limit >= n_total else int(limit)
    return RunIdentity(config_hash, graph, graph_digest, dataset, file_digest(dataset_file), eff_limit,
                       n_questions, n_total, experiment, code["package"], code["src_sha256"],
                       plugin.get("plugin"), plugin.get("plugin_sha256"))
