"""``hublab data graphs`` (build GV1–GV4 from the bibliography), ``hublab graph compare`` and ``hublab graph stats``."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from hublab.cli.app import GRAPH_HELP, data_app, graph_app
from hublab.errors import InputError
from hublab.progress import want_progress


@data_app.command("graphs")
def graphs_cmd(
    variants: str = typer.Option(None, help="comma-separated variants (default: params.yaml graphs.variants)"),
) -> None:
    """Build the graph variants from the annotated bibliography into data/graphs/<variant>.ttl."""
    from hublab.config import settings
    from hublab.graph.variants import build_variants

    s = settings()
    cfg = s.section("graphs")
    names = [v.strip() for v in variants.split(",")] if variants else list(cfg.get("variants") or [])
    if not names:
        raise InputError("no variants to build (set graphs.variants)", file=str(s.root / "params.yaml"),
                         field="graphs.variants")
    bib = s.path("bibliography")
    evidence = s.path("evidence") if "evidence" in s.params.get("paths", {}) else None
    out_dir = s.path("graphs")
    stats = build_variants(bib, out_dir, names, evidence_path=evidence)
    for v, st in stats.items():
        path = Path(st["path"])
        shown = path.relative_to(s.root) if path.is_relative_to(s.root) else path
        typer.echo(f"{v} ({st['name']}): {st['papers']} papers, {st['contributions']} contributions, "
                   f"{st['triples']} triples, {st['entities']} entities -> {shown}")


def load_any(graph: Path | str, st=None):
    """Any graph ``--graph`` accepts (a built-in or declared name, an RDF file, a SPARQL endpoint URL), with the
    project's settings or ``st`` (a call's label predicates); Ctrl-C or SIGTERM while it is read (an endpoint's pages)
    is one line and 130/143, not click's "Aborted!"."""
    from hublab.cli.app import interrupt_message
    from hublab.config import settings
    from hublab.pipeline.resources import load_graph

    with interrupt_message("the graph was not read; nothing was written"):
        return load_graph(str(graph), st or settings(), progress=want_progress(None))


@graph_app.command("compare")
def compare_cmd(
    candidate: str = typer.Argument(..., help="graph to check (" + GRAPH_HELP + ")"),
    reference: str = typer.Argument(..., help="reference graph (the same kinds)"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
    scope: str = typer.Option("papers", help="papers: only what hangs off Paper nodes (drops export noise); all"),
    sample: int = typer.Option(10, help="how many missing/extra triples to show"),
) -> None:
    """Label-level comparison (ids ignored): precision = |A∩B|/|A|, recall = |A∩B|/|B| over triple multisets."""
    from hublab.graph.compare import compare_graphs

    if scope not in ("papers", "all"):
        raise typer.BadParameter("expected 'papers' or 'all'", param_hint="--scope")
    result = compare_graphs(load_any(candidate), load_any(reference), scope=scope, sample=sample)
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"{Path(candidate).name} vs {Path(reference).name} (scope: {scope})")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key in ("precision", "recall", "jaccard"):
        table.add_row(key, f"{result[key]:.4f}")
    for key in ("candidate_triples", "reference_triples", "common_triples", "missing_count", "extra_count",
                "candidate_papers", "reference_papers"):
        table.add_row(key, str(result[key]))
    console.print(table)
    samples = (("missing (in reference only)", "missing_sample"), ("extra (in candidate only)", "extra_sample"))
    for title, key in samples:
        if result[key]:
            console.print(f"[bold]{title}[/bold]")
            for s_, p, o in result[key]:
                console.print(f"  ({s_}, {p}, {o})", markup=False)


@graph_app.command("stats")
def stats_cmd(
    graph_file: str = typer.Argument(..., help=GRAPH_HELP),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Triples, entities, papers, contributions, depth and predicate counts of a graph file."""
    from hublab.graph.compare import graph_stats

    st = graph_stats(load_any(graph_file))
    if as_json:
        typer.echo(json.dumps(st, ensure_ascii=False, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    from hublab.redact import scrub

    table = Table(title=scrub(str(graph_file)))
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key in ("triples", "paper_subgraph_triples", "entities", "literals", "papers", "contributions",
                "max_depth_from_paper"):
        table.add_row(key, str(st[key]))
    console.print(table)
    preds = Table(title="predicates")
    preds.add_column("predicate")
    preds.add_column("triples", justify="right")
    for p, n in st["predicates"].items():
        preds.add_row(p, str(n))
    console.print(preds)

