"""How HubLink's cost grows with the graph: ORKG-shaped graphs at 1×, 10× and 100× the papers of the real GV3
export (153 → 1,530 → 15,300 papers; hublab.graph.synthetic), LLM-free HubLink on each.

    .venv/bin/python bench/bench_scale.py [--factors 1 10 100] [--embedder minilm|hash] [--questions 40]
        [--store lite|lite-server|uri] [--uri http://host:19530] [--index '{"type": "HNSW", ...}']
        [--exact-max-vectors 500000]

Per size: papers, triples, hub paths, vectors, index build time and vectors/s, peak RSS of a fresh process,
index size on disk, retrieval latency median/p95 (KGQA questions about the original papers, which every
size contains), and the share of those questions whose golden triple is in the top 10. ``--embedder hash``
replaces MiniLM by a deterministic hashing embedder (no model cost) to measure what is *not* embedding:
graph walks, Milvus inserts, the exact mirror and search. Each size runs in its own process. Prints a table
and writes docs/scale.json and docs/scale.png (rows of earlier runs are kept unless re-measured: same embedder,
factor and store).

The store is chosen by size as in a pipeline (``vector_store: {exact: auto, exact_max_vectors: N}``): a Lite
collection of up to N vectors is searched through the exact in-memory mirror, a larger one natively.
``--store lite`` is a Milvus Lite file (engine in the benchmark process), ``lite-server`` a ``milvus-lite server``
process started per size (its RSS counts in the peak), ``uri`` a Milvus server: with ``--uri`` an existing one,
without it a Milvus 2.3.5 standalone server (the ``milvus`` extra) started per size on 127.0.0.1 with ``--index``
(default IVF_FLAT nlist=1024, nprobe=64; ``DEFAULT_INDEX`` says why). On a server the benchmark also waits until
the server's index covers every row (``index_wait_s``), and reports the server's peak RSS and data folder size
and the index's recall of the exact top 20 for the questions' vectors (``ann_recall_at_20``; exact scores from a
file-backed copy of the inserted vectors, ``bench/scale_server.py``).

Safety on a shared machine: the parent polls /proc/meminfo and kills the size's process tree when MemAvailable
drops below ``--min-available-gb`` (default 5); the child logs progress (vectors inserted, rate, RSS) to
``.cache/bench_scale/<size>.log``, so a killed run still says how far it got. ``--latency-budget-s`` bounds the
retrieval phase per size (native search on a large Lite collection costs seconds per filtered search).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


#: the server index the benchmark builds with --store uri: IVF_FLAT, because HNSW loses most of the exact top 20 on
#: these replicated graphs (every paper's texts ×factor: identical vectors crowd its neighbour lists). GV3 ×10 on a
#: 2.3.5 standalone (docs/scale.md): IVF_FLAT nlist 1024 / nprobe 64 recall@20 0.996, HNSW M 16 / efConstruction
#: 200 recall 0.58 at ef 64 and 0.71 at ef 512
DEFAULT_INDEX = {"type": "IVF_FLAT", "nlist": 1024, "nprobe": 64}


def _log(msg: str) -> None:
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{time.strftime('%H:%M:%S')} [peak rss {rss:.0f} MB] {msg}", file=sys.stderr, flush=True)


def _start_lite_server(data: Path) -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "milvus-lite"), "server", "--data-dir", str(data),
                             "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"milvus-lite server exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}"
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError("milvus-lite server did not open its port")


def one_size(factor: int, embedder: str, n_questions: int, work: Path, shared: Path, store: str = "lite",
             uri: str | None = None, exact_max_vectors: int | None = 500_000, latency_budget_s: float = 900.0,
             index: dict | None = None, quiet_load: float | None = None, quiet_wait_s: float = 3600,
             reuse: bool = False) -> dict:
    import resource

    import scale_server

    from hublab.env import apply_offline_defaults

    apply_offline_defaults()
    from hublab.datasets.kgqa_csv import load_kgqa_csv
    from hublab.embedding.factory import build_embedder
    from hublab.embedding.hashing import HashingEmbedder
    from hublab.evaluation.retrieval import retrieval_metrics
    from hublab.graph.rdf import RdfKnowledgeGraph
    from hublab.graph.synthetic import replicate
    from hublab.pipeline.config import load_pipeline
    from hublab.retrievers.base import Resources
    from hublab.retrievers.registry import build_retriever
    from hublab.vectorstore.factory import build_vector_store

    base = RdfKnowledgeGraph.load(shared / "data/orkg/gv3_flat_distributed.json", name="gv3_orkg")
    t0 = time.perf_counter()
    graph = replicate(base, factor)
    gen_s = time.perf_counter() - t0
    _log(f"x{factor}: graph of {len(graph)} triples in {gen_s:.1f} s")
    d = work / f"x{factor}_{embedder}_{store}"
    import shutil

    earlier = reuse and (d / "milvus_standalone").is_dir()  # --reuse: an earlier run's index to resume or reuse
    if not reuse:
        shutil.rmtree(d, ignore_errors=True)  # a cold build every time
    minilm = {"model": "all-MiniLM-L6-v2", "device": "auto"}
    emb = HashingEmbedder(384) if embedder == "hash" else build_embedder(minilm, None)
    server = standalone = rss = None
    cfg = {"uri": uri if store != "lite" else None, "exact": "auto", "exact_max_vectors": exact_max_vectors}
    if store == "lite-server":
        server, cfg["uri"] = _start_lite_server(d / "milvus_server")
    elif store == "uri":
        cfg["index"] = index
        if uri is None:  # a Milvus standalone server of our own for this size: its RSS and data folder are measured
            standalone = scale_server.start_server(d / "milvus_standalone")
            cfg["uri"] = standalone.uri
            rss = scale_server.TreeRss(standalone.proc.pid)
            _log(f"x{factor}: Milvus standalone at {standalone.uri}")
        os.environ[scale_server.TOKEN_ENV] = standalone.token if standalone else os.environ.get("MILVUS_TOKEN", "")
        cfg["token_env"] = scale_server.TOKEN_ENV
    vs = build_vector_store(cfg, d / "index.db")
    copy = (scale_server.VectorCopy(work / f"x{factor}_vectors.f32", emb.dim, append=reuse) if store == "uri"
            else None)
    inserted = {"n": 0, "t0": time.perf_counter(), "next": 0}
    insert = vs.insert

    def logged_insert(name, vectors, rows):  # progress for a run that may be killed
        insert(name, vectors, rows)
        if copy is not None:
            copy.add(vectors)
        inserted["n"] += len(rows)
        if inserted["n"] >= inserted["next"]:
            el = time.perf_counter() - inserted["t0"]
            _log(f"x{factor}: {inserted['n']} vectors inserted in {el:.0f} s ({inserted['n'] / el:.0f}/s)")
            inserted["next"] = inserted["n"] + 25_000

    vs.insert = logged_insert
    try:
        res = Resources(graph=graph, embedder=emb, vector_store=vs, index_name=f"scale_x{factor}", cache_dir=str(d),
                        index_dir=str(d), root_entity_ids=["R659055"])
        # the project's default LLM-free pipeline (bounded output, its ranking), direct strategy: every question
        # searches the whole index first, the size-dependent part
        params = {**load_pipeline(ROOT / "pipelines" / "hublink_local.yaml").retriever_params,
                  "auto_index": False, "use_topic_if_given": False}
        r = build_retriever("hublink", res, params)
        t0 = time.perf_counter()
        inserted["t0"] = t0
        stats = r.index(progress=False)
        build_s = time.perf_counter() - t0
        load_build = os.getloadavg()[0]
        vectors = int(stats.get("vectors_written") or 0)
        reused_vectors = vs.count(r.hub_index.collection) if reuse and not vectors else None
        _log(f"x{factor}: index built, {vectors} vectors in {build_s:.0f} s")
        size_mb = sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) / 2**20
        pairs = load_kgqa_csv(shared / "data/kgqa/flat_distributed.csv")[:n_questions]
        collection = r.hub_index.collection
        server_row: dict = {}
        if store == "uri":
            server_row = _server_figures(vs, collection, copy, emb, [p.question for p in pairs], standalone,
                                         keep_copy=reuse)
            _log(f"x{factor}: server index complete after {server_row['index_wait_s']} s more; "
                 f"ANN recall@20 {server_row['ann_recall_at_20']}")
        quiet_s = _wait_for_quiet(quiet_load, quiet_wait_s, f"x{factor}") if quiet_load is not None else 0.0
        load_latency = os.getloadavg()[0]
        t = time.perf_counter()
        r.retrieve(pairs[0].question)  # warm-up: mirror load, path records
        warm_s = time.perf_counter() - t
        mode = "mirror" if vs.mirrors(collection) else "native"
        _log(f"x{factor}: warm-up question in {warm_s:.1f} s, search {mode}")
        lat, hits, sizes = [], [], []
        t_lat = time.perf_counter()
        for p in pairs:
            if lat and time.perf_counter() - t_lat > latency_budget_s:
                _log(f"x{factor}: latency budget spent after {len(lat)} questions")
                break
            t = time.perf_counter()
            out = r.retrieve(p.question)
            lat.append(time.perf_counter() - t)
            hits.append(retrieval_metrics(out.context_strings, list(p.golden_triples), 10)["hit_at_10_triples"])
            sizes.append(len(out.context_strings))
            _log(f"x{factor}: question {len(lat)} in {lat[-1]:.2f} s")
        lat.sort()
        size_end_mb = sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) / 2**20  # after compaction
        server_row["server_peak_rss_mb"] = rss.stop() if rss is not None else None
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if standalone is not None:
            standalone.stop()
    if reuse:  # what the build of this run did: nothing when an earlier run's index was complete
        server_row["build"] = "cold" if not earlier else "reused" if not vectors else "resumed"
        server_row["vectors_searched"] = reused_vectors or vectors  # a reused build wrote none
    return {**server_row,
        "factor": factor, "embedder": embedder, "store": store, "search": mode,
        "exact_max_vectors": exact_max_vectors, "warmup_s": round(warm_s, 2),
        "papers": len(graph.entities_by_type("Paper")),
        "triples": len(graph), "hubs": stats.get("hubs"), "paths": stats.get("paths"), "vectors": vectors,
        "graph_generation_s": round(gen_s, 1), "index_build_s": round(build_s, 1),
        "vectors_per_s": round(vectors / build_s, 1) if build_s and vectors else None,
        "index_size_mb": round(size_mb, 1), "index_size_end_mb": round(size_end_mb, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "server_peak_rss_mb": (round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
                               if server is not None else server_row.get("server_peak_rss_mb")),
        "latency_median_s": round(statistics.median(lat), 4),
        "latency_p95_s": round(lat[int(0.95 * (len(lat) - 1))], 4),
        "hits@10": round(statistics.mean(hits), 4), "triples_per_question": round(statistics.mean(sizes), 1),
        "questions": len(lat), "load_avg_1m_after_build": round(load_build, 2),
        "load_avg_1m_before_latency": round(load_latency, 2), "quiet_wait_s": round(quiet_s),
    }


def _wait_for_quiet(max_load: float, wait_s: float, label: str) -> float:
    """Wait until the 1-minute load average is at most ``max_load`` (another job on the machine would be measured
    as latency), at most ``wait_s``; returns the seconds waited."""
    t0 = time.monotonic()
    while os.getloadavg()[0] > max_load and time.monotonic() - t0 < wait_s:
        _log(f"{label}: load average {os.getloadavg()[0]:.2f} > {max_load}: waiting before the latency phase")
        time.sleep(30)
    return time.monotonic() - t0


def _server_figures(vs, collection: str, copy, emb, questions: list[str], standalone, keep_copy: bool = False) -> dict:
    """After the build on a server: wait until its vector index covers every row (searches before that scan
    unindexed segments), measure its data folder, and the index's recall of the exact top 20 (HubLink's global
    search fetches 2·top_paths_to_keep = 20 per query vector) for the questions' vectors."""
    import scale_server

    wait_s = scale_server.wait_for_index(vs.client, collection, log=_log)
    vs._ensure_loaded(collection)  # a reused index was never written (so never loaded) by this process
    k = 20
    queries = np.asarray(emb.embed(questions), dtype=np.float32)
    kth = scale_server.exact_kth_scores(copy.finish(), queries, k)
    row = {"index_wait_s": round(wait_s, 1), "index": vs.index.as_dict(),
           "ann_recall_at_20": scale_server.ann_recall(vs.client, collection, queries, kth, k,
                                                       vs.index.search_params(k))}
    if standalone is not None:
        row["server_data_mb"] = scale_server.dir_size_mb(standalone.data)
    if not keep_copy:
        copy.path.unlink()
    return row


def plot(rows: list[dict], path: Path) -> None:
    """Build rate, peak RSS and latency against papers; a size the watchdog killed is a hollow marker at what it
    had reached (its build rate so far, its RSS at the kill)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    done = [r for r in rows if "status" not in r]
    killed = [r for r in rows if "status" in r]
    papers_of = {r["factor"]: r["papers"] for r in done}
    series = sorted({f"{r['embedder']}/{r.get('store', 'lite')}" for r in rows})
    for i, emb in enumerate(series):
        color = f"C{i}"
        rs = sorted((r for r in done if f"{r['embedder']}/{r.get('store', 'lite')}" == emb), key=lambda r: r["papers"])
        ks = [r for r in killed if f"{r['embedder']}/{r.get('store', 'lite')}" == emb]
        x = [r["papers"] for r in rs]
        kx = [papers_of.get(r["factor"], 153 * r["factor"]) for r in ks]
        built = [r for r in rs if r.get("vectors_per_s")]  # a reused index (--reuse) has no build figures
        axes[0].plot([r["papers"] for r in built], [r["index_build_s"] for r in built], "o-", color=color, label=emb)
        axes[1].plot([r["papers"] for r in built], [r["vectors_per_s"] for r in built], "o-", color=color, label=emb)
        axes[1].plot(kx, [r.get("partial_vectors_per_s") for r in ks], "o", mfc="none", color=color,
                     label=f"{emb} stopped early (rate so far)" if ks else None)
        axes[2].plot(x, [r.get("tree_peak_rss_mb") or r["peak_rss_mb"] for r in rs], "o-", color=color, label=emb)
        axes[2].plot(kx, [r.get("tree_peak_rss_mb") or r.get("peak_rss_mb") for r in ks], "o", mfc="none",
                     color=color, label=f"{emb} stopped early (peak RSS so far)" if ks else None)
        axes[3].plot(x, [r["latency_median_s"] * 1000 for r in rs], "o-", color=color, label=f"{emb} median")
        axes[3].plot(x, [r["latency_p95_s"] * 1000 for r in rs], "x--", color=color, label=f"{emb} p95")
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    ticks = sorted({r["papers"] for r in done} | {153 * r["factor"] for r in killed})
    titles = ("cold index build (s)", "build rate (vectors/s)", "peak RSS (MB)", "retrieval latency (ms)")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(ticks)
        ax.set_xlim(min(ticks) / 1.5, max(ticks) * 1.5)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(ScalarFormatter())
            axis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("papers")
        ax.set_title(title)
        ax.legend(fontsize=7)
    factors = ", ".join(str(f) for f in sorted({r["factor"] for r in rows}))
    fig.suptitle(f"LLM-free HubLink on ORKG-shaped graphs (GV3 × {factors}), 2 CPU cores shared with other jobs;"
                 " hollow = run stopped before its end (watchdog or deadline)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _mem_available_gb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    return float("inf")


def _tree_rss_mb(pid: int) -> float:
    import psutil

    try:
        p = psutil.Process(pid)
        procs = [p, *p.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for q in procs:
        try:
            total += q.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


def run_size(cmd: list[str], log: Path, min_available_gb: float, wait_s: float = 600) -> tuple[int, float, str]:
    """Run one size in its own process (group); kill the group when MemAvailable < ``min_available_gb``.
    Returns (exit code, peak RSS of the process tree sampled every second, stdout)."""
    import signal

    peak = 0.0
    deadline = time.monotonic() + wait_s
    while _mem_available_gb() < min_available_gb + 1.5 and time.monotonic() < deadline:
        time.sleep(5)  # let other jobs on a shared machine finish before starting a size
    with open(log, "w") as err, open(log.with_suffix(".out"), "w+") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, start_new_session=True,
                                env={**os.environ, "PYTHONHASHSEED": "0"})
        while proc.poll() is None:
            peak = max(peak, _tree_rss_mb(proc.pid))
            avail = _mem_available_gb()
            if avail < min_available_gb:
                err.write(f"{time.strftime('%H:%M:%S')} WATCHDOG: MemAvailable {avail:.1f} GB < {min_available_gb} GB,"
                          f" killing the run (tree RSS {peak:.0f} MB)\n")
                err.flush()
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
            time.sleep(1.0)
        out.seek(0)
        return proc.returncode, peak, out.read()


def _same(a: dict, b: dict) -> bool:
    key = ("embedder", "factor")
    return [a.get(k) for k in key] == [b.get(k) for k in key] and a.get("store", "lite") == b.get("store", "lite")


def _partial(log: Path, factor: int, embedder: str, store: str, tree_peak: float) -> dict:
    """What a run the watchdog killed got to: the last progress line (vectors inserted, rate, peak RSS)."""
    import re

    text = log.read_text()
    row: dict = {"factor": factor, "embedder": embedder, "store": store, "status": "killed by the memory watchdog",
                 "tree_peak_rss_mb": round(tree_peak, 1)}
    ins = re.findall(r"\[peak rss (\d+) MB\] x\d+: (\d+) vectors inserted in (\d+) s \((\d+)/s\)", text)
    if ins:
        rss, n, secs, rate = ins[-1]
        row.update(partial_vectors=int(n), partial_build_s=int(secs), partial_vectors_per_s=int(rate),
                   peak_rss_mb=int(rss))
    kill = re.findall(r"WATCHDOG: (.*)", text)
    row["watchdog"] = kill[-1] if kill else None
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--factors", type=int, nargs="+", default=[1, 10, 100])
    ap.add_argument("--embedder", choices=["minilm", "hash"], nargs="+", default=["hash", "minilm"])
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--max-minilm-factor", type=int, default=10, help="skip MiniLM above this factor (CPU time)")
    ap.add_argument("--store", choices=["lite", "lite-server", "uri"], default="lite")
    ap.add_argument("--uri", help="an existing Milvus server for --store uri (default: a Milvus standalone server "
                    "started per size on 127.0.0.1, its RSS and data folder measured)")
    ap.add_argument("--index", default=json.dumps(DEFAULT_INDEX),
                    help="vector_store.index for --store uri, as JSON (default %(default)s)")
    ap.add_argument("--exact-max-vectors", type=int, default=500_000,
                    help="vector_store.exact_max_vectors: mirror up to this many vectors, native search above")
    ap.add_argument("--latency-budget-s", type=float, default=900.0, help="retrieval phase time limit per size")
    ap.add_argument("--quiet-load", type=float, help="before the latency phase, wait until the 1-minute load "
                    "average is at most this (a build may share the machine; its latency should not)")
    ap.add_argument("--quiet-wait-s", type=float, default=3600, help="wait at most this long for --quiet-load")
    ap.add_argument("--min-available-gb", type=float, default=5.0, help="watchdog: kill a size below this")
    ap.add_argument("--wait-s", type=float, default=600, help="wait at most this long for memory headroom")
    ap.add_argument("--attempts", type=int, default=2, help="tries per size when the watchdog killed it")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--reuse", action="store_true",
                    help="keep each size's work folder (index manifest, the standalone server's data, the vector copy "
                    "for the recall check) and resume its build: a complete index from an earlier --reuse run is "
                    "searched again without being rebuilt (the row says \"build\": \"reused\")")
    ap.add_argument("--one", nargs=2, metavar=("FACTOR", "EMBEDDER"), help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(ROOT / "docs"))
    args = ap.parse_args()
    work = ROOT / ".cache" / "bench_scale"
    if args.one:
        row = one_size(int(args.one[0]), args.one[1], args.questions, work, Path(args.shared), args.store, args.uri,
                       args.exact_max_vectors, args.latency_budget_s, json.loads(args.index), args.quiet_load,
                       args.quiet_wait_s, args.reuse)
        print(json.dumps(row))
        return
    work.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = json.loads((out / "scale.json").read_text()) if (out / "scale.json").exists() else []
    for emb in args.embedder:
        for f in args.factors:
            if emb == "minilm" and f > args.max_minilm_factor:
                continue
            cmd = [sys.executable, __file__, "--one", str(f), emb, "--questions", str(args.questions),
                   "--shared", args.shared, "--store", args.store, "--exact-max-vectors", str(args.exact_max_vectors),
                   "--latency-budget-s", str(args.latency_budget_s), "--index", args.index,
                   "--quiet-wait-s", str(args.quiet_wait_s)] + (["--uri", args.uri] if args.uri else []) + (
                       ["--quiet-load", str(args.quiet_load)] if args.quiet_load is not None else []) + (
                       ["--reuse"] if args.reuse else [])
            log = work / f"x{f}_{emb}_{args.store}.log"
            for attempt in range(1, args.attempts + 1):
                print(f"{time.strftime('%H:%M:%S')} x{f} {emb} {args.store} (attempt {attempt}): log {log}", flush=True)
                rc, tree_peak, stdout = run_size(cmd, log, args.min_available_gb, args.wait_s)
                if rc == 0 or "WATCHDOG" not in log.read_text():
                    break
                partial = _partial(log, f, emb, args.store, tree_peak)
                rows = [r for r in rows if not _same(r, partial)] + [partial]
                (out / "scale.json").write_text(json.dumps(rows, indent=1))
                plot(rows, out / "scale.png")
            if rc != 0:
                print(f"x{f} {emb} failed (rc {rc}, tree peak {tree_peak:.0f} MB):\n"
                      f"{log.read_text()[-2000:]}", file=sys.stderr, flush=True)
                continue
            row = json.loads(stdout.strip().splitlines()[-1])
            row["tree_peak_rss_mb"] = round(tree_peak, 1)
            rows = [r for r in rows if not _same(r, row)] + [row]
            print(json.dumps(row), flush=True)
            rows.sort(key=lambda r: (r["embedder"], r.get("store", "lite"), r["factor"]))
            (out / "scale.json").write_text(json.dumps(rows, indent=1))
            plot(rows, out / "scale.png")
    cols = ["embedder", "store", "search", "factor", "papers", "triples", "paths", "vectors", "index_build_s",
            "vectors_per_s", "index_size_mb", "peak_rss_mb", "tree_peak_rss_mb", "latency_median_s",
            "latency_p95_s", "hits@10", "triples_per_question", "questions", "index_wait_s", "server_peak_rss_mb",
            "server_data_mb", "ann_recall_at_20", "status", "partial_vectors",
            "partial_vectors_per_s"]
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r.get(c)) for c in cols) + " |")


if __name__ == "__main__":
    main()
