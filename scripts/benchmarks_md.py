"""Write docs/benchmarks.md from the benchmark files in reports/bench/*.json: what was measured, the figure, the
machine and the date of each. Every figure in the docs comes from here, so a re-measured file updates the page
(``tests/platform/test_benchmarks_page.py`` fails when the page is older than its files).

    .venv/bin/python scripts/benchmarks_md.py [--check]
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "reports" / "bench"
OUT = ROOT / "docs" / "benchmarks.md"


def _date(path: Path, data: dict) -> str:
    """The measurement's date: the file's own, else the day the file was last committed."""
    if (data.get("machine") or {}).get("date"):
        return data["machine"]["date"]
    p = subprocess.run(["git", "log", "-1", "--format=%cs", "--", str(path.relative_to(ROOT))], cwd=ROOT,
                       capture_output=True, text=True)
    return p.stdout.strip() or "not committed yet"


def _machine(data: dict) -> str:
    m = data.get("machine") or {}
    if m:
        loop = f"; a pure-Python loop of 10^7 squares: {m['reference_loop_s']} s" if "reference_loop_s" in m else ""
        return f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores{loop}"
    cpus = data.get("cpus")
    return f"{cpus} CPU cores (model not recorded)" if cpus else "not recorded"


def _table(head: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join("–" if v is None else str(v) for v in r) + " |" for r in rows]
    return out


def endpoint(d: dict) -> list[str]:
    g = d["gv3"]
    lines = ["A graph over a SPARQL endpoint (Oxigraph on 127.0.0.1) against the same graph read from its file; every "
             "LLM-free method over the endpoint with `hublab run P --graph URL` (`bench/bench_endpoint.py`).", ""]
    lines += _table(["GV3", "seconds", "peak RSS (MB)"], [
        ["`oxigraph load` of the Turtle file", g["oxigraph_load_s"], None],
        [f"HubLab reads the file ({g['read_file']['triples']:,} triples)", g["read_file"]["load_s"],
         g["read_file"]["peak_rss_mb"]],
        ["HubLab reads the endpoint (fingerprint + pages)", g["read_endpoint"]["load_s"],
         g["read_endpoint"]["peak_rss_mb"]]])
    lines += [""]
    rows = [[name, round(r["hit_at_10_triples"], 4), round(r["map_at_10_triples"], 4), r["s_per_question"],
             r["index_build_s"],
             {True: "identical", False: "DIFFERENT", None: "no committed report"}[r["committed_metrics_identical"]]]
            for name, r in d["runs_over_endpoint"].items()]
    lines += _table(["pipeline over the endpoint", "Hits@10", "MAP@10", "s/question", "index build from the "
                     "endpoint (s)", "vs committed reports/eval"], rows)
    mem = d["hublink_in_memory"]
    lines += ["", f"HubLink per question: {d['runs_over_endpoint']['hublink_local']['s_per_question']} s over the "
              f"endpoint, {mem['s_per_question']} s on the built-in in-memory graph in the same session: "
              f"**{d['hublink_endpoint_over_memory']}×** (goal ≤ 1.5×; the endpoint is read once, before the first "
              "question, so a question sends no query)."]
    if "large" in d:
        big = d["large"]
        lines += ["", f"The largest graph loaded: GV3 ×{big['factor']} (`hublab.graph.synthetic`, a {big['file_mb']} "
                  f"MB Turtle file, {big['read_file']['triples']:,} triples), each read in a fresh process:", ""]
        lines += _table(["GV3 ×" + str(big["factor"]), "seconds", "peak RSS (MB)"], [
            ["`oxigraph load`", big["oxigraph_load_s"], None],
            ["HubLab reads the file", big["read_file"]["load_s"], big["read_file"]["peak_rss_mb"]],
            ["HubLab reads the endpoint", big["read_endpoint"]["load_s"], big["read_endpoint"]["peak_rss_mb"]]])
    return lines


def run(d: dict) -> list[str]:
    lines = [f"`hublab run {d['pipeline']} --graph {d['graph']} --dataset {d['dataset']} --limit N` as a whole "
             "process (`bench/bench_run.py`): start-up and time per further question.", ""]
    lines += _table(["--limit", "wall (s)", "start-up (s)"], [[c["limit"], c["wall_s"], c.get("startup_s")]
                                                             for c in d["command"]])
    lines += ["", f"Per further question: {d['command_slope_s_per_question']} s (in process, warm: "
              + ", ".join(f"{k} {v['wall_mean_s']} s" for k, v in d["in_process"].items()) + ")."]
    return lines


def tune_all(d: dict) -> list[str]:
    cache = {True: "from a cold cache (no embeddings, no indices)", False: "with the embedding cache filled"}.get(
        d.get("cold_cache"), "cache state not recorded")
    lines = [f"`hublab tune-all --n-trials {d['n_trials']} --jobs {d['jobs']}` (`bench/bench_tune_all.py`, pruner "
             f"{d.get('pruner', 'none')}, {cache}): **{d['total_s']:.0f} s** in all.", ""]
    same = any("same_choice_as_committed" in m for m in d["methods"])
    rows = [[m["method"], m["trials"], m.get("pruned", "–"), m["wall_s"],
             round(m["wall_s"] / max(1, m["trials"] + int(m.get("pruned") or 0)), 2),  # per trial run, pruned too
             m.get("index_builds", "–"), m.get("index_reused", "–"), m.get("texts_embedded", "–"),
             round(m["default_map10"], 4), round(m["best_map10"], 4)]
            + ([{True: "yes", False: "no"}.get(m.get("same_choice_as_committed"), "–")] if same else [])
            for m in d["methods"]]
    return lines + _table(["method", "complete", "pruned", "wall (s)", "s/trial", "index builds", "reused",
                           "texts embedded", "default MAP@10", "best MAP@10"]
                          + (["same choice as pipelines/tuned/"] if same else []), rows)


def compare(d: dict) -> list[str]:
    lines = [f"`hublab compare --graph G --dataset Q --hub-type H --n-trials {d['n_trials']}` on each example graph "
             f"(`bench/bench_compare.py`, every LLM-free method, {d['jobs']} studies at once, from a cold cache: no "
             "embeddings, indices, checkpoints or studies). Target: at most 10 minutes per graph on 2 cores.", ""]
    rows = [[g["graph"], g["questions"], g["folds"], g["methods"], g["trials"], g["pruned"], g["wall_s"],
             round(g["wall_s"] / 60, 1), g["best"], f"{g['best_map10']} [{g['best_map10_ci'][0]}, "
             f"{g['best_map10_ci'][1]}]"] for g in d["graphs"]]
    return lines + _table(["graph", "questions", "folds", "methods", "trials", "pruned", "wall (s)", "wall (min)",
                           "best (pooled)", "its MAP@10 [95% CI]"], rows)


def protocol(d: dict) -> list[str]:
    lines = [f"{d['pipeline']} on every graph (`bench/bench_quality.py`): quality, and seconds per question of the "
             "protocol's own loop.", ""]
    rows = []
    for g, v in d.items():
        if isinstance(v, dict) and "metrics" in v:
            m = v["metrics"].get("all (170)") or next(iter(v["metrics"].values()))
            secs = [r["seconds"] for r in v.get("rows", []) if "seconds" in r]
            rows.append([g, m.get("hit_at_10_triples"), m.get("map_at_10_triples"),
                         round(sum(secs) / len(secs), 3) if secs else None])
    return lines + _table(["graph", "Hits@10", "MAP@10", "s/question"], rows)


def graph_scale(d: dict) -> list[str]:
    lines = ["An N-Triples file of 10^5 to 10^7 triples (replicas of GV1 and of the catalogue example, "
             "`bench/bench_graph_scale.py`), each step in a fresh process: a raw `pyoxigraph` bulk load into an "
             "on-disk store; the graph opened as a run opens it, from nothing kept; `hublab graph check FILE --json` "
             "as a user types it (default settings: a file of 64 MB "
             "or more is kept in HubLab's on-disk store), cold (the store built by the command) and again (the store "
             "reused); the same command on the in-memory path where it fits (its JSON compared with the store's); "
             "BM25 as `hublab run bm25` opens the graph, builds and searches it. Targets on 2 cores: 10^7 triples "
             "loaded in ≤ 5 minutes at ≤ 4 GB; `graph check` on 10^6 within 3× of the raw load; BM25 ≤ 0.1 s a "
             "question at 10^7.", ""]
    if d.get("note"):
        lines += [f"Conditions: {d['note']}.", ""]

    def skipped(step: dict) -> bool:
        return "skipped" in step

    def check(step: dict | None) -> list:
        if step is None:
            return [None, None, None]
        if skipped(step):
            return [None, None, "not run: " + step["skipped"]]
        return [step["wall_s"], step["peak_rss_mb"], f"{step['vs_oxigraph']}×"]

    above_mb = d.get("store_above_mb", 64)  # user_graphs.store.above_mb when measured: the file kept on disk from it
    rows = []
    for r in d["sizes"]:
        mem = r.get("check_in_memory")
        same = None if mem is None or skipped(mem) else {True: "yes", False: "NO"}[mem["same_json"]]
        rows.append([r["graph"], f"{r['triples']:,}", r["mb"], r["oxigraph"]["wall_s"], r["oxigraph"]["peak_rss_mb"],
                     r["oxigraph"]["disk_mb"], "on disk" if r["mb"] >= above_mb else "in memory"]
                    + [r.get("load", {}).get("wall_s"), r.get("load", {}).get("peak_rss_mb"),
                       r.get("load", {}).get("store_mb")]
                    + check(r["check"]) + [r.get("check_again", {}).get("wall_s")]
                    + check(mem) + [same])
    lines += _table(["graph", "triples", "file (MB)", "pyoxigraph load (s)", "its peak RSS (MB)", "its store on disk "
                     "(MB)", "HubLab keeps it", "opened as a run, cold (s)", "its peak RSS (MB)", "HubLab's store (MB)",
                     "graph check, cold (s)", "its peak RSS (MB)", "check / load",
                     "check again (s)", "in memory (s)", "its peak RSS (MB)", "in memory / load", "same JSON"], rows)
    rows = []
    for r in d["sizes"]:
        b = r["bm25"]
        if skipped(b):
            continue
        ref, full = b.get("rank_bm25"), b.get("search_every_positive")
        rows.append([r["graph"], f"{r['triples']:,}", b.get("graph_kept", "RdfKnowledgeGraph"), f"{b['units']:,}",
                     b["questions"], b["read_s"], b["build_s"], b["build_rss_mb"], b.get("peak_rss_mb"),
                     f"{b['search']['p50_ms']} / {b['search']['p95_ms']}",
                     f"{full['p50_ms']} / {full['p95_ms']} ({'same' if full['same_ranking'] else 'NOT the same'})"
                     if full else None,
                     f"{ref['search']['p50_ms']} / {ref['search']['p95_ms']}" if ref else None,
                     {True: "yes", False: "NO"}[ref["same_ranking"]] if ref else None])
    lines += ["", f"BM25 (top {d['k']} units a question; a question whose words' postings pass 1/64 of the corpus "
              "is scored in one slot per document, and only those at or above the k-th best score among its rarest "
              "word's documents are sorted; each question is also searched sorting every document above 0, the two "
              "in turns):", ""]
    lines += _table(["graph", "triples", "graph kept by", "units", "questions", "graph open (s)", "index build (s)",
                     "build memory (MB)", "peak RSS (MB)", "search p50 / p95 (ms)",
                     "every document above 0 sorted, p50 / p95 (ms; its rankings)", "rank-bm25 p50 / p95 (ms)",
                     "same ranking"], rows)
    return lines + _graph_scale_commands(d)


def _graph_scale_commands(d: dict) -> list[str]:
    """The ``run`` step (``hublab run bm25`` as typed) and the ``index`` step (``hublab index`` of a vector method)."""
    rows = []
    for r in d["sizes"]:
        run = r.get("run_bm25")
        if run is None:
            continue
        m = run["metrics"]
        rows.append([r["graph"], f"{r['triples']:,}", run["questions"], run["wall_s"], run["peak_rss_mb"],
                     round(run["index_build_s"], 1), round(m["runtime"] * 1000, 1), round(m["hit_at_10_triples"], 3),
                     round(m["triples_per_question"], 1), m["n_degraded"]])
    lines = ["", "`hublab run bm25 --graph FILE --dataset QUESTIONS --no-carbon --json` as typed, in a project of "
             "its own sharing the store `graph check` built (a user's second command); the whole command, MLflow "
             "run included:", ""]
    lines += _table(["graph", "triples", "questions", "command (s)", "its peak RSS (MB)", "index build (s)",
                     "retrieval a question, mean (ms)", "Hits@10 (triples)", "triples returned a question",
                     "degraded"], rows)
    rows = []
    for r in d["sizes"]:
        for key, what in (("index", "triples"), ("index_nodes", "nodes"), ("index_nodes_server", "nodes, server")):
            ix = r.get(key)
            if ix is None:
                continue
            if "skipped" in ix:
                rows.append([r["graph"], f"{r['triples']:,}", what, None, None, None, None,
                             "not run: " + ix["skipped"]])
                continue
            minilm = ix.get("minilm_projected_s")
            note = (f"server: {ix['server_peak_rss_mb'] / 1024:.1f} GB peak RSS, {ix['server_data_mb'] / 1024:.1f} GB "
                    "data" if "server_peak_rss_mb" in ix else f"{minilm / 60:.0f} min (projected)" if minilm else None)
            rows.append([r["graph"], f"{r['triples']:,}", what, f"{ix['units']:,}", ix["command_s"],
                         ix["command_peak_rss_mb"], ix.get("minilm_units_per_s"), note])
    lines += ["", "`hublab index --pipeline vss_<units>.yaml --graph FILE` (VSS over every triple, or over the "
              "candidate nodes' documents as `pipelines/vss.yaml` does, Milvus Lite) as the command runs, on the "
              "store `graph check` kept (a file of 64 MB or more), with the hashing embedder in MiniLM's place; "
              "MiniLM's rate measured on 1,024 of the same triple units and its build time projected from it. "
              "*nodes, server*: the same command with `vector_store.uri` a Milvus 2.3.5 standalone server on "
              "127.0.0.1 (`bench/bench_index_server.py`), whose process tree's peak RSS and data folder are given "
              "beside it:", ""]
    lines += _table(["graph", "triples", "units embedded", "vectors", "command (s)", "its peak RSS (MB)",
                     "MiniLM units/s", "MiniLM build, or the server"], rows)
    return lines


def hublink_store(d: dict) -> list[str]:
    lines = [f"`{d['pipeline']}` on `{d['graph']}` (`bench/bench_hublink_store.py`), the hashing embedder in MiniLM's "
             "place, each mode in a process and project of its own: the graph read into memory, or kept in HubLab's "
             "on-disk store (`user_graphs.store.mode: disk`); every question retrieved (direct strategy). Same "
             f"triples for every question in both modes: {'yes' if d['same_triples'] else 'NO'}.", ""]
    rows = [[mode, m["graph_kept_by"], m["open_s"], m["index_ready_s"], m["questions"], m["p50_ms"], m["p95_ms"],
             m["mean_ms"], m["peak_rss_mb"]] for mode, m in d["modes"].items()]
    return lines + _table(["store mode", "graph kept by", "graph open (s)", "index built (s)", "questions",
                           "p50 (ms)", "p95 (ms)", "mean (ms)", "peak RSS (MB)"], rows)


RENDERERS: dict[str, tuple[str, Callable[[dict], list[str]]]] = {
    "hublink_store.json": ("HubLink with the graph kept on disk", hublink_store),
    "endpoint.json": ("A graph over a SPARQL endpoint", endpoint),
    "run.json": ("Start-up and time per question", run),
    "tune_all.json": ("Every method tuned with the same budget", tune_all),
    "tune_all_cold.json": ("Every method tuned with the same budget, from a cold cache", tune_all),
    "protocol.json": ("HubLink on every graph variant", protocol),
    "compare.json": ("The fair comparison on a user's graph", compare),
    "protocol_finetuned.json": ("HubLink with the fine-tuned embedder", protocol),
    "graph_scale.json": ("Graphs at their real size: reading, BM25, a run and an index", graph_scale),
}


def render() -> str:
    out = ["# Benchmarks", "",
           "Generated by `scripts/benchmarks_md.py` from `reports/bench/*.json`; do not edit by hand. Each section "
           "says what was measured, on which machine and when. Figures of cost against graph size: "
           "[scale](scale.md); on a GPU: [gpu](gpu.md).", ""]
    for path in sorted(BENCH.glob("*.json")):
        data = json.loads(path.read_text())
        title, fn = RENDERERS.get(path.name, (path.stem, None))
        out += [f"## {title}", "", f"*Machine: {_machine(data)}. Date: {_date(path, data)}. "
                f"Source: `reports/bench/{path.name}`.*", ""]
        out += fn(data) if fn else ["(no renderer for this file yet: its figures are in the JSON)"]
        out += [""]
    return "\n".join(out).rstrip() + "\n"


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is out of date: run .venv/bin/python scripts/benchmarks_md.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
