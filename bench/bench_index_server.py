"""``hublab index`` of ``vss``'s node documents with the collection in a Milvus standalone server
(``vector_store.uri``) instead of Milvus Lite, whose engine runs inside the HubLab process and holds every segment
in memory: how much of the ``index`` step's memory is HubLab's own once the vectors live elsewhere.

    .venv/bin/python bench/bench_index_server.py [--graph catalogue] [--size 10000000] \
        [--json reports/bench/graph_scale.json]

The replica, the command and the hashing embedder are those of ``bench_graph_scale.py``'s ``index`` step (its
``--step index FILE --index-only nodes``, in a process of its own: its peak RSS is the HubLab process alone). A
fresh Milvus 2.3.5 standalone server is started for it on 127.0.0.1 (``tests/support/milvus_servers.py``), its
process tree's RSS sampled every second, and its data folder measured once the command is done. The result is
written to the row's ``index_nodes_server``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import scale_server  # noqa: E402 - bench/ is put on the path above
from bench_graph_scale import bench_project  # noqa: E402
from graph_replicas import WORK, write_replica  # noqa: E402
from measured import flattened, measured  # noqa: E402


def index_on_server(graph: str, size: int) -> dict:
    """The ``index`` step embedding nodes, with ``vector_store.uri`` a server started for it; the server stopped."""
    path = str(ROOT / write_replica(graph, size)["file"])
    base = WORK / "index_server"
    shutil.rmtree(base, ignore_errors=True)
    server = scale_server.start_server(base)
    try:
        root = bench_project("index_server")
        pipeline = root / "vss_nodes.yaml"
        cfg = yaml.safe_load(pipeline.read_text())
        cfg["vector_store"] = {"uri": server.uri, "token_env": scale_server.TOKEN_ENV}  # the server's default index
        pipeline.write_text(yaml.safe_dump(cfg, sort_keys=False))
        tree = scale_server.TreeRss(server.proc.pid)
        ix = measured([sys.executable, str(ROOT / "bench" / "bench_graph_scale.py"), "--step", "index", path,
                       "--index-only", "nodes"], {"HUBLAB_ROOT": str(root), scale_server.TOKEN_ENV: server.token})
        server_peak = tree.stop()
    finally:
        server.stop()
    return {**flattened(ix), "server_peak_rss_mb": server_peak,
            "server_data_mb": scale_server.dir_size_mb(base / "data")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", default="catalogue")
    ap.add_argument("--size", type=int, default=10_000_000)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    res = index_on_server(args.graph, args.size)
    print(json.dumps(res), flush=True)
    if args.json:
        data = json.loads(args.json.read_text())
        for row in data["sizes"]:
            if row["graph"] == args.graph and row["target_triples"] == args.size:
                row["index_nodes_server"] = res
        args.json.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
