"""What ``hublab report compare`` will do, said before it starts (each of its rows is a whole run)."""

from __future__ import annotations

from typing import Any


def fair_plan(st: Any, todo: list[Any], graphs: tuple[tuple[str, str], ...], limit: int | None) -> str:
    """One line: the configurations, the graphs with their question counts, and the runs that makes."""
    from hublab.datasets.catalog import load_dataset

    sizes = []
    for graph, dataset in graphs:
        try:
            n = len(load_dataset(st, dataset))
        except Exception:  # noqa: BLE001 - the run says what is wrong with the dataset, located
            n = 0
        sizes.append(f"{graph} ({min(n, limit) if limit else n} questions)" if n else graph)
    runs = len(todo) * len(graphs)
    return (f"{len(todo)} configurations (each method's default, and its tuned file where there is one) on "
            f"{', '.join(sizes)}: {runs} runs, each resumed from its checkpoint when it has one (outputs/runs/); "
            "the table follows when the last one ends")
