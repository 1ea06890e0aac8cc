"""CLI: ``hublab ask``: one question, its answer and the supporting triples with their papers."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from hublab.cli.app import (
    AS_JSON,
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
from hublab.preflight import check_llm, check_run, print_warnings


@app.command("ask", cls=StrictCommand)
def ask_cmd(
    question: str = typer.Argument(..., help="The question."),
    pipeline: Path = typer.Option(..., "--pipeline", help="Pipeline YAML, or its name (hublab list)."),
    graph: str = typer.Option(..., "--graph", help=GRAPH_HELP),
    hub_type: list[str] | None = HUB_TYPE,
    label_predicate: list[str] | None = LABEL_PREDICATE,
    type_predicate: list[str] | None = TYPE_PREDICATE,
    topic_entity: str | None = typer.Option(None, "--topic-entity", help="Entry entity id (e.g. R659055)."),
    top: int = typer.Option(10, "--top", help="How many supporting triples to print."),
    llm_base_url: str | None = LLM_BASE_URL,
    llm_model: str | None = LLM_MODEL,
    as_json: bool = AS_JSON,
) -> None:
    """Answer one question; print the answer and the supporting triples with their source papers."""
    from hublab.pipeline.pipeline import build_pipeline  # local: retrievers and their libraries (~0.25 s)

    use_llm_endpoint(llm_base_url, llm_model)
    st = call_settings(label_predicate, type_predicate)
    checked = check_run(pipeline, graph, None, settings=st, llm_base_url=llm_base_url, tracking=False,
                        hub_types=hub_type)
    checked.warnings[:0] = check_llm(checked.cfg)  # key, server and model before the index and models load
    print_warnings(checked.warnings)
    pipe = build_pipeline(checked.cfg, graph, st)
    pipe.retriever.ensure_ready()
    graph_obj = pipe.retriever.resources.graph
    topic_value = graph_obj.label(topic_entity) if topic_entity else None
    out = pipe.run(question, topic_entity, topic_value)
    if as_json:
        typer.echo(json.dumps({
            "question": question, "answer": out.answer, "reason": out.reason, "notes": out.notes,
            "runtime_s": out.runtime_s, "sources": out.sources,
            "triples": [{"text": c.text, "score": c.score,
                         "paper": (p.uid if (p := graph_obj.paper_of(c.triple.subject.uid)) else None)
                         if c.triple else None} for c in out.contexts[:top]],
        }, indent=1, default=str))
        return
    con = Console()
    con.print(f"[bold]Answer[/bold] ({out.runtime_s:.2f} s):\n{out.answer}\n")
    if not out.contexts:
        con.print(f"[yellow]No supporting triples.[/yellow] {out.reason or ''}")
        return
    con.print("[bold]Supporting triples[/bold]")
    for i, c in enumerate(out.contexts[:top], start=1):
        paper = graph_obj.paper_of(c.triple.subject.uid) if c.triple else None
        src = f"  [dim]← {paper.text}[/dim]" if paper else ""
        score = f" ({c.score:.3f})" if c.score is not None else ""
        con.print(f"{i:>2}. {c.text}{score}{src}")
    for note in out.notes:
        con.print(f"[yellow]note:[/yellow] {note}")
