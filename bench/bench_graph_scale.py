"""Graphs at their real size: reading an N-Triples file of 10^5, 10^6 and 10^7 triples with the command a
user types (``hublab graph check``) against a raw ``pyoxigraph`` bulk load of the same file, BM25 over the graph's
triples as ``hublab run bm25`` builds and searches them, the ``hublab run bm25`` command itself, and ``hublab
index`` of a vector method.

    .venv/bin/python bench/bench_graph_scale.py [--sizes 100000 1000000 10000000] [--graphs gv1 catalogue]
        [--in-memory-max 2000000] [--reference-max 200000] [--index-max 2000000]
        [--json reports/bench/graph_scale.json] [--bm25-only | --index-only {triples,nodes}]

The files are replicas written line by line, never held in memory:

* ``gv1``: ORKG-shaped, ``data/graphs/gv1.ttl`` with every paper's own subgraph copied under fresh IRIs as
  ``hublab.graph.synthetic.replicate`` does (research field, venues and classes shared; a copy's title carries its
  copy number); the GV1 KGQA questions are about the original papers, present at every size.
* ``catalogue``: a graph of another shape, ``examples/graphs/catalogue/graph.ttl`` (schema.org software), each
  software application's own subgraph copied the same way; its questions are ``examples/graphs/catalogue/
  questions.csv``.

Per graph and size, each step in a process of its own (peak resident memory is that process's ``ru_maxrss``):

* ``oxigraph``: ``Store(dir).bulk_load(path=file)``: seconds, peak RSS, store size on disk;
* ``load``: the graph opened as a run opens it, from nothing kept (HubLab's on-disk store built for a file of
  ``user_graphs.store.above_mb`` or more, else the graph read into memory): seconds, peak RSS, store size;
* ``check``: ``hublab graph check FILE --json`` as a user types it (default settings), cold (the kept store removed
  first) and again (reused): seconds, peak RSS, and the ratio to the raw load (the target: within 3× at 10^6);
  ``check_in_memory``: the same command with ``user_graphs.store.mode: memory``, and whether its JSON is the same.
  Skipped above ``--in-memory-max`` triples, where its memory (1.3–1.7 GB per 10^6 triples) would exceed the
  machine: the row says so, with the memory projected from the largest size it ran on;
* ``bm25``: the graph opened as a run opens it, the units and the BM25 index built (seconds, growth of resident
  memory over the build), then each question searched for 20 units (p50/p95). Up to ``--reference-max`` units,
  rank-bm25 on the same tokens, and whether every ranking is the same;
* ``run_bm25``: ``hublab run bm25 --graph FILE --dataset QUESTIONS --no-carbon --json`` as a user types it, in a
  project folder of its own (its MLflow runs stay out of the repository) that shares the store ``graph check``
  built: seconds and peak RSS of the whole command, its index build, mean retrieval time a question, Hits@10;
* ``index``: ``hublab index --pipeline vss_triples.yaml --graph FILE`` (``vss`` embedding every triple, Milvus
  Lite) as the command runs, with the hashing embedder in MiniLM's place: seconds, vectors, peak RSS; then MiniLM's
  rate on 1,024 of the same units, from which its build is projected. Skipped above ``--index-max`` triples (a
  vector per triple: the Lite engine's memory grows ~3–5 KB a vector), with what it would take projected.

``--bm25-only`` and ``--index-only`` measure those steps again on the rows in ``--json`` (after a change to the code
they time), keeping the rest. Writes the JSON (``--json``) that ``scripts/benchmarks_md.py`` turns into its page."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_projects import project  # noqa: E402 - bench/ is put on the path above
from graph_replicas import GRAPHS, WORK, write_replica  # noqa: E402
from measured import flattened, measured, ms, rss_mb  # noqa: E402

K = 20


# ---------------------------------------------------------------- steps, each in its own process
def step_oxigraph(path: str) -> dict:
    import shutil

    import pyoxigraph

    store_dir = WORK / "oxigraph_store"
    shutil.rmtree(store_dir, ignore_errors=True)
    t0 = time.perf_counter()
    store = pyoxigraph.Store(str(store_dir))
    store.bulk_load(path=path, format=pyoxigraph.RdfFormat.N_TRIPLES)
    store.flush()
    seconds = time.perf_counter() - t0
    quads = len(store)
    del store
    size = sum(f.stat().st_size for f in store_dir.rglob("*") if f.is_file())
    shutil.rmtree(store_dir, ignore_errors=True)
    return {"s": round(seconds, 1), "quads": quads, "disk_mb": round(size / 1e6, 1)}


def step_load(path: str) -> dict:
    """The graph opened as a run opens it (``hublab.pipeline.resources.load_graph``), from no kept store: for a file of
    ``user_graphs.store.above_mb`` or more, HubLab's on-disk store built from the file."""
    import shutil

    from hublab.pipeline.resources import load_graph

    shutil.rmtree(ROOT / ".cache" / "graph-stores", ignore_errors=True)
    t0 = time.perf_counter()
    graph = load_graph(path)
    seconds = time.perf_counter() - t0
    folder = getattr(graph, "folder", None)
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder else None
    return {"s": round(seconds, 1), "kept_by": type(graph).__name__, "triples": len(graph),
            "store_mb": round(size / 1e6, 1) if size else None}


def step_bm25(name: str, path: str, reference_max: int) -> dict:
    import numpy as np

    from hublab.config import settings
    from hublab.datasets.catalog import load_dataset
    from hublab.pipeline.resources import load_graph
    from hublab.retrievers.components.lexical_index import BM25Index, tokenize
    from hublab.retrievers.components.units import graph_triple_units

    questions = [p.question for p in load_dataset(settings(ROOT), str(ROOT / GRAPHS[name][2]))]
    t0 = time.perf_counter()
    graph = load_graph(path)  # as a run opens it: the on-disk store for a file of user_graphs.store.above_mb or more
    read_s = time.perf_counter() - t0
    rss0 = rss_mb()
    t0 = time.perf_counter()
    # the corpus `hublab run bm25` builds on these graphs (units: auto, a graph that answers with triples): a list in
    # memory, or the triples' positions on a graph kept on disk
    units = graph_triple_units(graph)
    index = BM25Index(units)
    row: dict = {"graph_kept": type(graph).__name__, "read_s": round(read_s, 1), "units": len(units),
                 "questions": len(questions),
                 "build_s": round(time.perf_counter() - t0, 1), "build_rss_mb": round(rss_mb() - rss0)}
    # each question searched twice, in turns (neither always the one that finds the units' pages cached): as a run
    # searches (past the sparse case, only the documents at the floor of the k best gathered) and gathering every
    # document above 0: the floor's own gain, and whether every ranking is the same
    lat, full_lat, ours, same = [], [], [], True
    floor = index._floor
    for n, q in enumerate(questions):
        got = {}
        for at_floor in ((True, False) if n % 2 == 0 else (False, True)):
            index._floor = floor if at_floor else (lambda *a, **kw: 0.0)
            t = time.perf_counter()
            got[at_floor] = [u.key for u, _ in index.search(q, K)]
            (lat if at_floor else full_lat).append(time.perf_counter() - t)
        ours.append(got[True])
        same = same and got[True] == got[False]
    index._floor = floor
    row["search"] = ms(lat)
    row["search_every_positive"] = {**ms(full_lat), "same_ranking": same}
    if len(units) <= reference_max:
        from rank_bm25 import BM25Okapi

        units = list(units)
        rss0 = rss_mb()
        t0 = time.perf_counter()
        bm = BM25Okapi([tokenize(u.text) or ["_"] for u in units])
        ref: dict = {"build_s": round(time.perf_counter() - t0, 1), "build_rss_mb": round(rss_mb() - rss0)}
        lat, same = [], True
        for q, mine in zip(questions, ours, strict=True):
            t = time.perf_counter()
            tokens = tokenize(q)
            scores = bm.get_scores(tokens) if tokens else np.zeros(len(units))
            order = np.argsort(-scores, kind="stable")[:K]
            theirs = [units[int(i)].key for i in order if scores[i] > 0]
            lat.append(time.perf_counter() - t)
            same = same and theirs == mine
        row["rank_bm25"] = {**ref, "search": ms(lat), "same_ranking": same}
    return row


#: the embedder ``hublab index`` is given in the ``index`` step (no model cost: what is measured is the rest), and
#: the unit texts MiniLM embeds there to measure its rate, from which its build time is projected
HASH_DIM, MINILM_SAMPLE = 384, 1024
#: what the ``index`` step's ``vss`` pipeline may embed: every triple, or every node's document
INDEX_UNITS = ("triples", "nodes")


def bench_project(kind: str) -> Path:
    """A project folder of the repository's ``params.yaml`` for the ``index`` and ``run`` steps (their index, MLflow
    runs and outputs stay out of the repository), sharing the repository's kept graph stores: the store ``graph
    check`` built is reused, as a user's second command reuses it. ``index*`` also gets ``vss_triples.yaml`` and
    ``vss_nodes.yaml``: the ``vss`` pipeline embedding every triple (the corpus a graph kept on disk holds as
    positions), or every node's document (the pipeline's default)."""
    import yaml

    root = project(WORK / f"{kind}_project", share_stores=True)
    if kind.startswith("index"):
        for units in INDEX_UNITS:
            cfg = yaml.safe_load((ROOT / "pipelines" / "vss.yaml").read_text())
            cfg["name"], cfg["retriever"]["params"]["units"] = f"vss_{units}", units
            (root / f"vss_{units}.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return root


def step_index(path: str, units: str = "triples") -> dict:
    """``hublab index --pipeline vss_<units>.yaml --graph FILE`` as the command runs it, with the hashing embedder in
    MiniLM's place (``hublab.embedding.factory.build_embedder`` replaced in this process), then, for triples,
    MiniLM's rate on :data:`MINILM_SAMPLE` of the same units, timed alone."""
    import shutil

    import hublab.embedding.factory as factory
    from hublab.cli import main as cli
    from hublab.embedding.hashing import HashingEmbedder

    root = Path(os.environ["HUBLAB_ROOT"])
    shutil.rmtree(root / "models", ignore_errors=True)  # a cold build every time
    real = factory.build_embedder
    factory.build_embedder = lambda cfg=None, cache_dir=None: HashingEmbedder(HASH_DIM)
    sys.argv = ["hublab", "index", "--pipeline", str(root / f"vss_{units}.yaml"), "--graph", path, "--no-progress"]
    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out):  # the command prints its stats (JSON)
        try:
            cli()
        except SystemExit as exc:
            if exc.code:
                raise
    row: dict = {"units_embedded": units, "command_s": round(time.perf_counter() - t0, 1),
                 "stats": json.loads(out.getvalue()),
                 "command_peak_rss_mb": round(rss_mb("VmHWM"))}  # before MiniLM is loaded
    if units != "triples":
        return {**row, "units": sum(int(v["units"]) for v in row["stats"].values() if isinstance(v, dict))}
    from hublab.pipeline.resources import load_graph
    from hublab.retrievers.components.units import graph_triple_units

    units = graph_triple_units(load_graph(path))
    texts = [u.text for u in units[:MINILM_SAMPLE]]
    minilm = real({"model": "all-MiniLM-L6-v2", "device": "cpu", "cache": False}, None)
    minilm.embed(texts[:64])  # the model loaded and warm
    t0 = time.perf_counter()
    minilm.embed(texts)
    rate = len(texts) / (time.perf_counter() - t0)
    return {**row, "units": len(units), "minilm_units_per_s": round(rate, 1),
            "minilm_projected_s": round(len(units) / rate)}


def _memory_project() -> Path:
    """A project whose params are the repository's with ``user_graphs.store.mode: memory``: the in-memory path."""
    return project(WORK / "in_memory_project", store_mode="memory")


def _skipped(triples: int, in_memory_max: int, earlier: list[dict]) -> str:
    """Why the in-memory path is not run on a file this large, with its memory projected from the largest size of the
    same graph it ran on."""
    ran = [r for r in earlier if "peak_rss_mb" in r.get("check_in_memory", {})]
    why = f"above --in-memory-max {in_memory_max:,} triples"
    if not ran:
        return why
    big = max(ran, key=lambda r: r["triples"])
    per_million = big["check_in_memory"]["peak_rss_mb"] / 1024 / (big["triples"] / 1e6)
    return (f"{why}; its memory projected at ~{per_million * triples / 1e6:.0f} GB ({per_million:.1f} GB per 10^6 "
            f"triples at {big['triples']:,})")


def _check_row(check: dict, ox: dict) -> dict:
    res = check["result"]
    return {"wall_s": check["wall_s"], "peak_rss_mb": check["peak_rss_mb"], "triples": res.get("triples"),
            "entities": res.get("entities"), "vs_oxigraph": round(check["wall_s"] / max(ox["wall_s"], 1e-9), 1)}


#: the metrics the ``run`` step keeps of ``hublab run --json``
_RUN_METRICS = ("hit_at_10_triples", "recall_at_10_triples", "mrr_at_10_triples", "triples_per_question", "runtime",
                "n_degraded", "failure_share")


def one(name: str, size: int, in_memory_max: int, reference_max: int, index_max: int, earlier: list[dict]) -> dict:
    """One file: the raw load; ``hublab graph check`` as a user types it (default settings: the on-disk store from
    64 MB), cold (the store built by the command) and again (the store reused), and on the in-memory path where it
    fits (its JSON must be the same); BM25 as a run opens the graph."""
    import shutil

    replica = write_replica(name, size)
    path = str(ROOT / replica["file"])
    row: dict = {"graph": name, "target_triples": size, **replica}
    row["oxigraph"] = flattened(ox := measured([sys.executable, __file__, "--step", "oxigraph", path]))
    print(json.dumps(row), file=sys.stderr, flush=True)
    load = measured([sys.executable, __file__, "--step", "load", path])
    row["load"] = flattened(load)
    cmd = [sys.executable, "-m", "hublab.cli", "graph", "check", path, "--json"]
    shutil.rmtree(ROOT / ".cache" / "graph-stores", ignore_errors=True)  # cold: the store is built by the command
    first = measured(cmd)
    row["check"] = _check_row(first, ox)
    row["check_again"] = _check_row(measured(cmd), ox)
    print(json.dumps(row), file=sys.stderr, flush=True)
    if replica["triples"] > in_memory_max:
        row["check_in_memory"] = {"skipped": _skipped(row["triples"], in_memory_max, earlier)}
    else:
        mem = measured(cmd, {"HUBLAB_ROOT": str(_memory_project())})
        row["check_in_memory"] = {**_check_row(mem, ox), "same_json": mem["result"] == first["result"]}
    print(json.dumps(row), file=sys.stderr, flush=True)
    _bm25_steps(row, name, path, reference_max)
    if replica["triples"] > index_max:
        row["index"] = {"skipped": _index_skipped(row["triples"], index_max, earlier)}
    else:
        ix = measured([sys.executable, __file__, "--step", "index", path],
                      {"HUBLAB_ROOT": str(bench_project("index"))})
        row["index"] = flattened(ix)
    return row


def _bm25_steps(row: dict, name: str, path: str, reference_max: int) -> None:
    """The ``bm25`` and ``run_bm25`` steps on one file, written to ``row``."""
    bm = measured([sys.executable, __file__, "--step", "bm25", path, "--name", name,
                   "--reference-max", str(reference_max)])
    row["bm25"] = flattened(bm)
    print(json.dumps(row), file=sys.stderr, flush=True)
    run = measured([sys.executable, "-m", "hublab.cli", "run", "bm25", "--graph", path, "--dataset",
                     str(ROOT / GRAPHS[name][2]), "--no-progress", "--no-carbon", "--json"],
                    {"HUBLAB_ROOT": str(bench_project("run"))})
    res = run["result"]
    row["run_bm25"] = {"wall_s": run["wall_s"], "peak_rss_mb": run["peak_rss_mb"], "questions": res["n_questions"],
                       "index_build_s": res["index_build_s"],
                       "metrics": {k: v for k, v in sorted(res["metrics"].items()) if k in _RUN_METRICS}}
    print(json.dumps(row), file=sys.stderr, flush=True)


def _index_skipped(triples: int, index_max: int, earlier: list[dict]) -> str:
    """Why ``hublab index`` is not run on a file this large, with its vectors, time and memory projected from the
    largest size of the same graph it ran on."""
    ran = [r for r in earlier if "stats" in r.get("index", {})]
    why = f"above --index-max {index_max:,} triples"
    if not ran:
        return why
    big = max(ran, key=lambda r: r["triples"])
    ix, scale = big["index"], triples / big["triples"]
    gb = ix["command_peak_rss_mb"] * scale / 1024
    return (f"{why}; projected from {big['triples']:,} triples: ~{ix['units'] * scale / 1e6:.1f} M vectors, "
            f"~{ix['command_s'] * scale / 60:.0f} min with the hashing embedder at ~{gb:.0f} GB, "
            f"~{ix['minilm_projected_s'] * scale / 3600:.0f} h of MiniLM on these cores")


def again(step: str, graphs: list[str], sizes: list[int], out: Path, reference_max: int, index_max: int) -> None:
    """One step measured again on rows already in ``out``, each row written back as soon as it is done: ``bm25``
    (the ``bm25`` and ``run_bm25`` steps, after a change to BM25) or ``index_<units>`` (the ``index`` step embedding
    ``units``, written to the row's ``index_nodes``, or to its ``index`` for triples, as a whole run writes it)."""
    result = json.loads(out.read_text())
    for row in result["sizes"]:
        if row["graph"] not in graphs or row["target_triples"] not in sizes:
            continue
        path = str(ROOT / write_replica(row["graph"], row["target_triples"])["file"])
        if step == "bm25":  # the store kept first, as the check steps of a whole run leave it
            measured([sys.executable, "-m", "hublab.cli", "graph", "check", path, "--json"])
            _bm25_steps(row, row["graph"], path, reference_max)
        else:
            units = step.removeprefix("index_")
            ix = measured([sys.executable, __file__, "--step", "index", path, "--index-only", units],
                           {"HUBLAB_ROOT": str(bench_project("index"))})
            key = "index" if units == "triples" else step  # the whole run's ``index`` step embeds triples
            row[key] = flattened(ix)
        same = [r for r in result["sizes"] if r["graph"] == row["graph"]]
        for big in (same if step == "index_triples" else []):  # projections follow the rows measured again
            if "skipped" in big.get("index", {}):
                big["index"]["skipped"] = _index_skipped(big["triples"], index_max, same)
        print(json.dumps(row), flush=True)
        out.write_text(json.dumps(result, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000, 10_000_000])
    ap.add_argument("--graphs", nargs="*", default=list(GRAPHS), choices=list(GRAPHS))
    ap.add_argument("--in-memory-max", type=int, default=2_000_000,
                    help="largest file HubLab's in-memory path (graph check, BM25) is run on")
    ap.add_argument("--reference-max", type=int, default=200_000, help="largest corpus rank-bm25 is measured on")
    ap.add_argument("--index-max", type=int, default=2_000_000,
                    help="largest file `hublab index` (a vector index of every triple) is run on")
    ap.add_argument("--index-only", choices=INDEX_UNITS, default=None,
                    help="only the index step, embedding these units, on rows already in --json (written as "
                         "index_nodes, or as index for triples)")
    ap.add_argument("--bm25-only", action="store_true",
                    help="only the bm25 and run_bm25 steps, again, on rows already in --json")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--step", nargs=2, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--name", default="gv1", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.step is not None:
        what, path = args.step
        res = (step_oxigraph(path) if what == "oxigraph" else step_load(path) if what == "load"
               else step_index(path, args.index_only or "triples") if what == "index"
               else step_bm25(args.name, path, args.reference_max))
        print(json.dumps(res))
        return
    if args.index_only or args.bm25_only:
        step = "bm25" if args.bm25_only else f"index_{args.index_only}"
        again(step, args.graphs, args.sizes, args.json, args.reference_max, args.index_max)
        return
    from machine import machine

    rows = []
    for name in args.graphs:
        for size in args.sizes:
            rows.append(one(name, size, args.in_memory_max, args.reference_max, args.index_max,
                            [r for r in rows if r["graph"] == name]))
            print(json.dumps(rows[-1]), flush=True)
    from hublab.config import settings
    from hublab.graph.source import store_settings

    result = {"k": K, "machine": machine(), "load_avg_before": list(os.getloadavg()),
              "store_above_mb": store_settings(settings(ROOT))[1], "sizes": rows}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        old = json.loads(args.json.read_text())["sizes"] if args.json.exists() else []
        keep = [r for r in old if (r["graph"], r["target_triples"]) not in {(x["graph"], x["target_triples"])
                                                                            for x in rows}]
        result["sizes"] = sorted(keep + rows, key=lambda r: (r["graph"], r["target_triples"]))
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
