"""CLI: ``hublab list`` — the graphs, datasets, pipelines and retriever methods this project knows."""

from __future__ import annotations

import json

import typer

from hublab.cli.app import app


@app.command("list")
def list_cmd(
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """List graph and dataset names (and whether they are built), pipelines and retriever methods (an installed plugin
    that cannot be used is shown with why, one line each)."""
    from rich.console import Console
    from rich.table import Table

    from hublab.config import settings
    from hublab.retrievers.registry import available, plugin_problems

    st = settings()
    graphs = [{"name": g, "built": st.graph_file(g).exists(), "file": str(st.graph_file(g).relative_to(st.root))}
              for g in st.graph_names()]
    from hublab.graph.backends import is_url
    from hublab.graph.source import declared_graphs  # params.yaml user_graphs: a file (or endpoint) of the user's
    from hublab.redact import scrub  # an endpoint's user:password@ or ?api_key= is never printed

    graphs += [{"name": name, "built": not is_url(spec["source"])
                and (st.root / spec["source"]).exists(), "file": scrub(spec["source"])}
               for name, spec in declared_graphs(st).items()]
    datasets = [{"name": d, "graph": st.graph_for_dataset(d), "built": st.dataset_file(d).exists()}
                for d in st.dataset_names()]
    pipelines = [{"name": p.stem, "file": str(p.relative_to(st.root) if p.is_relative_to(st.root) else p)}
                 for p in st.pipeline_files()]
    problems = plugin_problems()  # imports each installed plugin (only here and when one is named)
    out = {"graphs": graphs, "datasets": datasets, "pipelines": pipelines, "retrievers": available(usable=True),
           "plugin_problems": problems}
    if as_json:
        typer.echo(json.dumps(out, indent=1))
        return
    con = Console()
    for title, rows in (("graphs (--graph)", graphs), ("datasets (--dataset, or a .csv/.jsonl path)", datasets),
                        ("pipelines", pipelines)):
        t = Table(title=title)
        for col in rows[0] if rows else ["name"]:
            t.add_column(col)
        for r in rows:
            t.add_row(*(str(v) for v in r.values()))
        con.print(t)
    con.print("retriever methods (retriever.type): " + ", ".join(out["retrievers"]), markup=False)
    for line in problems:
        con.print(f"plugin not usable: {line}", markup=False, soft_wrap=True)
