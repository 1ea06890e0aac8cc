"""CLI: ``hublab eval-file`` (re-score a thesis-format predictions CSV)."""

from __future__ import annotations

from pathlib import Path

import typer

from hublab.cli.app import app


@app.command("eval-file")
def eval_file_cmd(
    predictions: Path = typer.Argument(..., help="Predictions CSV in the thesis's format."),
    output: Path = typer.Option(..., "--output", help="Where to write the recomputed per-row metrics."),
    generation: bool = typer.Option(True, "--generation/--no-generation", help="Also BLEU and ROUGE."),
    compare: bool = typer.Option(False, "--compare", help="Print max |diff| per column vs the file's own values."),
    k: int = typer.Option(10, "--k"),
    graph: str | None = typer.Option(None, "--graph", help="The graph golden triples written as N-Triples statements "
                                     "refer to (a name, an RDF file or a SPARQL endpoint URL): each is compared as the "
                                     "graph's triple string, as in hublab run."),
) -> None:
    """Recompute retrieval (and BLEU/ROUGE) metrics per row under the reference's column names."""
    import json

    from rich.console import Console
    from rich.table import Table

    from hublab.evaluation import conformance as cf
    from hublab.reports.tables import write_csv

    rows = cf.read_predictions(predictions, need_generation=generation)
    if graph is not None:
        _resolve_golden(rows, graph, predictions)
    ours = cf.recompute(rows, k=k, generation=generation)
    write_csv(ours, output)  # the one CSV writer: a question's formula lead is neutralised
    con = Console()
    con.print(f"wrote {len(ours)} rows to {output}")
    if compare:
        rep = cf.compare(rows, ours, k=k)
        t = Table(title=f"{predictions.name}: recomputed vs reference")
        for c in ("column", "max |diff|", "rows > 1e-6", "order-dependent", "unexplained"):
            t.add_column(c)
        for col, e in rep.items():
            t.add_row(col, f"{e['max_abs_diff']:.2e}", str(e["rows_over_1e-6"]), str(e["order_dependent_rows"]),
                      str(e["unexplained_rows"]))
        con.print(t)
        bad = {c: e for c, e in rep.items() if e["unexplained_rows"]}
        if bad:
            con.print(f"[red]unexplained differences:[/red] {json.dumps(bad)}")
            raise typer.Exit(1)


def _resolve_golden(rows: list[dict], graph: str, predictions: Path) -> None:
    """Golden N-Triples statements → the graph's triple strings (what a run retrieves and its predictions hold); a
    statement the graph lacks is a located error (it could never be matched: a silent 0 otherwise)."""
    from hublab.datasets.model import is_statement, parse_statement
    from hublab.errors import InputError
    from hublab.pipeline.resources import load_graph

    kg = load_graph(graph)
    for i, row in enumerate(rows, start=1):
        golden = []
        for g in row["_golden"]:
            if not is_statement(g):
                golden.append(g)
                continue
            found = kg.triple_for_statement(*parse_statement(g))
            if found is None:
                raise InputError(f"golden statement not in graph {graph}: {g.strip()[:200]}", file=str(predictions),
                                 row=i, field="golden_triples")
            golden.append(found.render())
        row["_golden"] = golden
