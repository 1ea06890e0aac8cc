"""``hublab data snapshot`` and ``hublab data datasets``: the DVC data stages before/after ``data graphs``."""

from __future__ import annotations

import typer

from hublab.cli.app import data_app


@data_app.command("snapshot")
def snapshot_cmd(
    source: str = typer.Option(None, help="export | api (default: params.yaml snapshot.source)"),
    name: str = typer.Option(None, help="snapshot name (default: params.yaml snapshot.name)"),
    research_field: str = typer.Option(None, "--research-field",
                                       help="ORKG research field id, e.g. R659055 (default: params.yaml "
                                       "snapshot.research_field)"),
) -> None:
    """Freeze the research field's papers (ORKG export or REST API) to data/snapshots/<name>.ttl + manifest."""
    from rich.progress import Progress

    from hublab.config import settings
    from hublab.graph.snapshot import build_snapshot

    s = settings()
    cfg = s.section("snapshot")
    if source:
        cfg["source"] = source
    if name:
        cfg["name"] = name
    where = ("snapshot.research_field", str(s.root / "params.yaml"))
    if research_field is not None:
        cfg["research_field"] = research_field
        where = ("--research-field", None)
    with Progress(transient=True) as progress:
        task = progress.add_task("fetching papers", total=None)

        def on_paper(i: int, n: int, pid: str) -> None:
            progress.update(task, total=n, completed=i, description=f"paper {pid}")

        manifest = build_snapshot(
            cfg, export_path=s.path("orkg_export"), out_dir=s.path("snapshots"), on_paper=on_paper, root=s.root,
            research_field_from=where,
        )
    out = s.path("snapshots") / f"{manifest['name']}.ttl"
    typer.echo(
        f"snapshot {manifest['name']}: {manifest['triple_count']} triples, {manifest['entity_count']} entities, "
        f"{manifest['papers']} papers (source {manifest['source']}) -> {out}\n"
        f"content hash {manifest['content_hash']}"
    )


@data_app.command("datasets")
def datasets_cmd(
    only: list[str] = typer.Option(None, "--only", help="build only these datasets (repeatable), e.g. gv3_orkg"),
) -> None:
    """Load the thesis KGQA CSVs, remap golden triples onto data/graphs/gvN.ttl, write data/kgqa/*.jsonl."""
    from rich.console import Console
    from rich.table import Table

    from hublab.config import settings
    from hublab.datasets.build import build_datasets

    report, rp = build_datasets(settings(), only)
    min_rate = report["min_mapping_rate"]
    failed = [n for n, e in report["datasets"].items() if e["mapping_rate"] < min_rate]
    table = Table(title=f"golden-triple mapping (min {min_rate:.0%})")
    columns = ("dataset", "graph", "questions", "golden", "placeholders", "mapped", "rate", "normalized", "topic fix")
    for col in columns:
        table.add_column(col, justify="left" if col in ("dataset", "graph") else "right")
    for n, e in report["datasets"].items():
        table.add_row(
            n, e["graph"], str(e["questions"]), str(e["golden_total"]), str(e["thesis_placeholders"]),
            str(e["mapped"]), f"{e['mapping_rate']:.2%}", str(e.get("normalized_label_matches", "-")),
            str(e.get("topic_entities_remapped", "-")),
        )
    Console(width=150).print(table)
    _known_quirks(settings(), list(report["datasets"]))
    typer.echo(f"report -> {rp}")
    if failed:
        typer.echo(f"error: mapping rate below {min_rate:.0%} for {failed} (see {rp})", err=True)
        raise typer.Exit(1)


def _known_quirks(st, names: list[str]) -> None:
    """The thesis's own data quirks, said once where the sets are built (a run on a built-in set does not repeat
    them): a uid given to two rows is run and scored as two questions."""
    from hublab.datasets.catalog import duplicate_uids, load_dataset

    for name in names:
        for uid, rows in duplicate_uids(load_dataset(st, name)).items():
            typer.echo(f"note: {name}: the thesis's CSV gives uid {uid!r} to rows {rows}; each row is run and scored "
                       "as its own question")


@data_app.command("register")
def register_cmd(
    dataset: list[str] = typer.Option(None, "--dataset", help="a dataset name or KGQA file (repeatable; default: "
                                      "every built dataset of params.yaml)"),
    graph: str | None = typer.Option(None, "--graph", help="the graph a KGQA file's golden triples refer to "
                                     "(default: the dataset's own graph)"),
    experiment: str = typer.Option("kgqa-datasets", "--experiment", help="MLflow experiment to link them to"),
) -> None:
    """Register the KGQA sets as MLflow evaluation datasets (versioned by content: unchanged data adds nothing)."""
    from hublab.config import settings
    from hublab.errors import raise_all
    from hublab.mlflow_eval.data import load_questions
    from hublab.mlflow_eval.register import register
    from hublab.preflight import check_names
    from hublab.tracking.mlflow_log import setup as setup_experiment

    problems: list = []
    check_names(problems, experiment=experiment)
    raise_all(problems)
    st = settings()
    names = list(dataset) if dataset else [n for n in st.dataset_names() if st.dataset_file(n).exists()]
    if not names:
        raise typer.BadParameter("no built dataset (run `hublab data datasets`) and no --dataset given",
                                 param_hint="--dataset")
    exp_id = setup_experiment(st.root, experiment)
    for name in names:
        own_graph = graph or (st.graph_for_dataset(name) if name in st.dataset_names() else None)
        if own_graph is None:
            raise typer.BadParameter(f"{name} is a file: name the graph its golden triples refer to",
                                     param_hint="--graph")
        pairs = load_questions(name, st.root)
        kgqa_set = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        reg = register(kgqa_set, pairs, own_graph, experiment_id=exp_id)
        state = "registered" if reg.created else "unchanged"
        typer.echo(f"{state}: {reg.name} ({reg.n_records} questions, MLflow dataset {reg.dataset_id})")
