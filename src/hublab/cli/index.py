"""CLI: ``hublab index``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from hublab.atomic import write_text_atomic
from hublab.cli.app import (
    GRAPH_HELP,
    HUB_TYPE,
    LABEL_PREDICATE,
    LLM_BASE_URL,
    LLM_MODEL,
    TYPE_PREDICATE,
    StrictCommand,
    app,
    call_settings,
    use_llm_endpoint,
)
from hublab.config import project_root
from hublab.errors import HubLabError
from hublab.graph.snapshot import write_provenance
from hublab.preflight import check_run, print_warnings


@app.command("index", cls=StrictCommand)
def index_cmd(
    pipeline: Path = typer.Option(..., "--pipeline", help="Pipeline YAML, or its name (hublab list)."),
    graph: str = typer.Option(..., "--graph", help=GRAPH_HELP),
    hub_type: list[str] | None = HUB_TYPE,
    label_predicate: list[str] | None = LABEL_PREDICATE,
    type_predicate: list[str] | None = TYPE_PREDICATE,
    stats_out: Path | None = typer.Option(None, "--stats", help="Write index stats JSON here (DVC metrics)."),
    llm_base_url: str | None = LLM_BASE_URL,
    llm_model: str | None = LLM_MODEL,
    progress: bool = typer.Option(True, "--progress/--no-progress", help="A progress bar over the build (with the "
                                  "LLM calls it makes), or one line saying the index is up to date (stderr)."),
) -> None:
    """Build or incrementally update the retriever's index for a graph."""
    from hublab.pipeline.pipeline import build_index  # local: retrievers and their libraries (~0.25 s)

    use_llm_endpoint(llm_base_url, llm_model)
    st = call_settings(label_predicate, type_predicate)
    checked = check_run(pipeline, graph, None, settings=st, stats_out=stats_out, llm_base_url=llm_base_url,
                        tracking=False, hub_types=hub_type, rebuild_damaged=True)
    print_warnings(checked.warnings)
    if checked.damaged_index is not None:
        _remove_damaged(checked.damaged_index)
    stats = build_index(checked.cfg, graph, progress=progress, settings=st)
    typer.echo(json.dumps(stats, indent=1, default=str))
    if stats_out:
        # timings and build history go to outputs/provenance/: the stats file is a DVC output of the index stage,
        # and a fresh clone that rebuilds the index must reproduce it byte for byte (clean `git status`)
        index_stats, timing = _split_stats(stats)
        write_provenance(project_root(), f"index-{stats_out.stem}", {"stats": str(stats_out), **timing})
        try:
            write_text_atomic(stats_out, json.dumps(index_stats, indent=1, default=str) + "\n")
        except OSError as exc:
            raise HubLabError(f"the index is built but writing {stats_out} failed: {exc.strerror or exc}") from None


def _remove_damaged(db: Path) -> None:
    """A damaged Lite index is built again from scratch, never opened or topped up (everything in it is derived)."""
    import shutil

    from hublab.vectorstore.lite_damage import lite_damage

    where, what = lite_damage(db) or (db, "is damaged")
    typer.echo(f"warning: {where} {what}: the Milvus Lite index {db} is damaged; removing it and building it again "
               "from scratch", err=True)
    shutil.rmtree(db) if db.is_dir() else db.unlink()


#: Stats of the build, not of the index: what this run had to do depends on what an earlier build left.
_HISTORY = frozenset({"hubs_reindexed", "hubs_removed", "vectors_written", "skipped", "evicted"})


def _is_timing(key: str) -> bool:
    """Stats that measure the machine (seconds, rates) or the build's history, not the index: a fresh clone's
    clean build and an incremental one describe the same index with the same stats file."""
    return "seconds" in key or key.endswith("_per_s") or key in _HISTORY


def _split_stats(stats: dict[str, Any], prefix: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """``stats`` as (the index's stats, the machine's and the build's), at every depth: a collection's own
    ``skipped``/``evicted`` (``{"nodes": {"skipped": true}}``) is the build's history as the top level's is. The
    second dict is flat, its nested keys dotted (``nodes.skipped``)."""
    kept: dict[str, Any] = {}
    moved: dict[str, Any] = {}
    for key, value in stats.items():
        if _is_timing(key):
            moved[prefix + key] = value
        elif isinstance(value, dict):
            kept[key], inner = _split_stats(value, f"{prefix}{key}.")
            moved.update(inner)
        else:
            kept[key] = value
    return kept, moved
