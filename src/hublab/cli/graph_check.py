"""``hublab graph check`` (a graph on one screen before a run) and ``hublab graph find`` (triples in both forms a
dataset's golden triples may take)."""

from __future__ import annotations

import json

import typer

from hublab.cli.app import GRAPH_HELP, HUB_TYPE, LABEL_PREDICATE, TYPE_PREDICATE, call_settings, graph_app
from hublab.cli.graph import load_any as _load


def _hub_types(graph: str, given: list[str] | None, st) -> list[str]:
    """``--hub-type`` (normalised), else the hub types the graph declares in params.yaml, else HubLink's default:
    the hub types a run on this graph would use."""
    from hublab.graph.shape import ShapeDefaults
    from hublab.graph.vocabulary import normalise_type
    from hublab.pipeline.resources import graph_source

    if given:
        return [normalise_type(h) for h in given]
    return list(graph_source(graph, st).hub_types) or list(ShapeDefaults().hub_types)


@graph_app.command("check")
def check_cmd(
    graph: str = typer.Argument(..., help=GRAPH_HELP),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
    top: int = typer.Option(10, "--top", min=1, help="how many types to list"),
    hub_type: list[str] | None = HUB_TYPE,
    label_predicate: list[str] | None = LABEL_PREDICATE,
    type_predicate: list[str] | None = TYPE_PREDICATE,
) -> None:
    """One screen on a graph before a run: triples, entities, literals, label coverage (and the predicates that
    could label the unlabelled nodes), the types by count (on an untyped graph, the predicates that could type it),
    the hub types HubLink could use (--hub-type), and the defaults that assume ORKG's shape but look wrong here."""
    from hublab.graph.profile import label_candidates, profile, type_candidates
    from hublab.graph.shape import shape_report
    from hublab.redact import scrub

    st = call_settings(label_predicate, type_predicate)
    kg = _load(graph, st)
    pr = profile(kg)
    table = kg.edge_table()  # read once: the label and type candidates and the shape report walk it
    candidates = label_candidates(kg, table=table) if pr.labelled < pr.entities - pr.literals else []
    typing = type_candidates(kg, table=table) if not pr.types else []
    shape = shape_report(kg, _hub_types(graph, hub_type, st), table=table)
    if as_json:
        typer.echo(json.dumps({"triples": pr.triples, "entities": pr.entities, "literals": pr.literals,
                               "label_coverage": round(pr.label_coverage, 4),
                               "types": [vars(c) for c in pr.types[:top]],
                               "label_candidates": [{"predicate": p, "unlabelled_nodes": n} for p, n in candidates],
                               "type_candidates": [{"predicate": c.predicate, "typed_nodes": c.typed_nodes,
                                                    "classes": c.classes} for c in typing],
                               "suggested_hub_types": [c.name for c in pr.suggested],
                               "orkg_shaped_defaults": shape.as_dict()}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    con = Console()
    nodes = pr.entities - pr.literals
    con.print(f"{pr.triples:,} triples, {pr.entities:,} entities ({pr.literals:,} literals); labels: "
              f"{pr.labelled:,} of {nodes:,} nodes ({pr.label_coverage:.0%}) have one from a label predicate, the "
              "rest show their IRI's local name", highlight=False)
    if candidates:
        flags = " ".join(f"--label-predicate {p}" for p, _ in candidates[:1])
        con.print("predicates with a literal on unlabelled nodes (label candidates): "
                  + ", ".join(f"{p} ({n:,} nodes)" for p, n in candidates)
                  + f"\ne.g. hublab graph check {scrub(graph)} {flags} (the same option on run, index, ask, compare "
                  "and tune-all)", highlight=False, markup=False, soft_wrap=True)
    if typing:
        con.print("no node has a type (rdf:type, or a --type-predicate); predicates whose IRI objects look like "
                  "classes (type candidates): "
                  + ", ".join(f"{c.predicate} ({c.typed_nodes:,} nodes, {c.classes:,} "
                              f"class{'es' if c.classes != 1 else ''})" for c in typing)
                  + f"\ne.g. hublab graph check {scrub(graph)} --type-predicate {typing[0].predicate} (the same "
                  "option on run, index, ask, compare and tune-all)", highlight=False, markup=False, soft_wrap=True)
    table = Table(title=f"types ({min(top, len(pr.types))} of {len(pr.types)})")
    table.add_column("type")
    table.add_column("instances", justify="right")
    table.add_column("their triples", justify="right")
    for c in pr.types[:top]:
        table.add_row(c.name, f"{c.instances:,}", f"{c.out_triples:,}")
    con.print(table)
    if pr.suggested:
        flags = " ".join(f"--hub-type {c.name}" for c in pr.suggested[:1])
        con.print("suggested hub types (most triples hanging off their instances): "
                  + ", ".join(f"{c.name} ({c.instances:,} instances)" for c in pr.suggested)
                  + f"\ne.g. hublab run hublink_local --graph {scrub(graph)} {flags} --dataset QUESTIONS",
                  highlight=False, markup=False)
    else:
        con.print("no type with at least two instances carrying structure: HubLink needs a hub type (--hub-type)",
                  highlight=False)
    _print_shape(con, shape)


def _print_shape(con, shape) -> None:
    """The defaults that assume ORKG's shape and look wrong for this graph, one line each with the evidence."""
    hubs = ", ".join(shape.hub_types)
    if shape.measured_with != shape.hub_types:
        hubs += f"; measured with the candidate {', '.join(shape.measured_with)}"
    head = f"defaults that assume ORKG's shape (hub types {hubs}: {shape.hubs:,} hubs; docs/your-graph.md)"
    if not shape.findings:
        con.print(f"{head}: none looks wrong for this graph", highlight=False, markup=False, soft_wrap=True)
        return
    con.print(f"{head}: {len(shape.findings)} look(s) wrong for this graph", highlight=False, markup=False,
              soft_wrap=True)
    for f in shape.findings:
        con.print(f"- {f.line()}", highlight=False, markup=False, soft_wrap=True)


@graph_app.command("find")
def find_cmd(
    text: str = typer.Argument(..., help="text to look for in subject, predicate and object labels"),
    graph: str = typer.Option(..., "--graph", help=GRAPH_HELP),
    limit: int = typer.Option(20, "--limit", min=1, help="at most this many triples"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Triples whose labels contain TEXT, each in both forms a dataset's golden_triples may use: the thesis's
    triple string and the N-Triples statement."""
    from hublab.graph.profile import find_triples
    from hublab.redact import scrub

    kg = _load(graph)
    found = find_triples(kg, text, limit)
    rows = [{"triple": t.render(), "statement": kg.statement(t)} for t in found]
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not rows:
        typer.echo(f"no triple of {scrub(graph)} has {text!r} in a label", err=True)
        raise typer.Exit(1)
    for r in rows:
        typer.echo(r["triple"])
        typer.echo("  " + r["statement"])
