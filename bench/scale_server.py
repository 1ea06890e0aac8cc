"""What ``bench_scale.py --store uri`` needs around a Milvus standalone server: start one per size (the tests'
launcher, ``tests/support/milvus_servers.py``), sample its process tree's RSS, wait until its vector index covers every
row, measure its data folder, and check the approximate index against exact search.

Exact search for the check comes from a copy of the inserted vectors in a file-backed array (``VectorCopy``): the
server's own vectors would have to cross gRPC as Python floats (2.6 M × 384 at ×100: far too slow), and the
hashing embedder's vectors are exactly what was inserted."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TOKEN_ENV = "HUBLAB_BENCH_MILVUS_TOKEN"


def start_server(base: Path):
    """A Milvus 2.3.5 standalone server on 127.0.0.1 with its data under ``base`` (``tests/support/milvus_servers.py``:
    its own process group, its own etcd ports, readiness by a pymilvus round trip)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support.milvus_servers import start_milvus_server

    return start_milvus_server(base, timeout=300)


class TreeRss:
    """Peak RSS of a process and its children, sampled every ``every`` s on a thread (``stop()`` returns MB)."""

    def __init__(self, pid: int, every: float = 1.0) -> None:
        import psutil

        self._proc = psutil.Process(pid)
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._every = every
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def now_mb(self) -> float:
        import psutil

        total = 0
        try:
            procs = [self._proc, *self._proc.children(recursive=True)]
        except psutil.Error:
            return 0.0
        for p in procs:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total / 2**20

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.peak_mb = max(self.peak_mb, self.now_mb())

    def stop(self) -> float:
        self._stop.set()
        self._thread.join(timeout=5)
        return round(max(self.peak_mb, self.now_mb()), 1)


def dir_size_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)


def wait_for_index(client, collection: str, timeout_s: float = 7200, log=print) -> float:
    """Seconds until the server's vector index covers every row (``describe_index``: no pending rows, indexed
    = total). Searches before that scan unindexed segments by brute force, so latency is measured after it."""
    t0 = time.perf_counter()
    last = ""
    while time.perf_counter() - t0 < timeout_s:
        d = client.describe_index(collection, "vector")
        total, done, pending = (int(d.get(k, 0) or 0) for k in ("total_rows", "indexed_rows", "pending_index_rows"))
        state = f"{done}/{total} rows indexed, {pending} pending, state {d.get('state')}"
        if state != last:
            log(f"index: {state}")
            last = state
        if total and done >= total and not pending:
            return time.perf_counter() - t0
        time.sleep(5)
    raise TimeoutError(f"the server's index was not complete after {timeout_s:.0f} s ({last})")


class VectorCopy:
    """Every inserted vector, appended to a float32 file (memory-mapped for the exact search)."""

    def __init__(self, path: Path, dim: int, append: bool = False) -> None:
        """``append``: keep the vectors an earlier run wrote (``bench_scale.py --reuse``: its index is searched
        again, nothing new is inserted)."""
        self.path, self.dim = path, dim
        path.parent.mkdir(parents=True, exist_ok=True)
        self.n = path.stat().st_size // (4 * dim) if append and path.is_file() else 0
        self._fh = open(path, "ab" if append else "wb")  # noqa: SIM115 - closed by finish()

    def add(self, vectors) -> None:
        a = np.ascontiguousarray(vectors, dtype=np.float32)
        self._fh.write(a.tobytes())
        self.n += len(a)

    def finish(self) -> np.ndarray:
        self._fh.close()
        return np.memmap(self.path, dtype=np.float32, mode="r", shape=(self.n, self.dim))


def exact_kth_scores(vectors: np.ndarray, queries: np.ndarray, k: int, chunk: int = 100_000) -> np.ndarray:
    """The exact k-th best cosine score per query over every row (float64 sums, chunked so the memmap is read
    once)."""
    q = queries.astype(np.float64)
    q /= np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
    best = np.full((len(q), k), -np.inf)
    for start in range(0, len(vectors), chunk):
        v = np.asarray(vectors[start : start + chunk], dtype=np.float64)
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        s = q @ v.T
        top = np.partition(s, -k, axis=1)[:, -k:] if s.shape[1] > k else s
        merged = np.concatenate([best, top], axis=1)
        best = -np.sort(-merged, axis=1)[:, :k]
    return best[:, k - 1]


def ann_recall(client, collection: str, queries: np.ndarray, kth: np.ndarray, k: int, search_params: dict) -> float:
    """Recall of the exact top ``k`` by the server's index, with ties: the share of its ``k`` hits per query that
    score at least the exact k-th score (less float32 slack). Many rows share a text (and so a vector), so
    counting by score, not by row id, is what "the same top k" means here."""
    res = client.search(collection, data=[q.tolist() for q in queries.astype(np.float32)], limit=k,
                        output_fields=[], search_params=search_params)
    got = [sum(1 for h in hits if float(h["distance"]) >= kth[i] - 1e-5) for i, hits in enumerate(res)]
    return round(sum(got) / (k * len(queries)), 4)
