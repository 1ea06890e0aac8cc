"""Which hub types a run of a method on a graph uses, decided in one place for every door (``hublab run``, ``index``,
``ask``, ``tune``, ``report compare --graph``, DVC's stages and the Python API): ``--hub-type`` when given, else the
hub types the graph declares (``params.yaml: user_graphs.graphs.<name>.hub_types``), else what the pipeline sets,
else the method's default (ORKG's Paper). A run whose hub types have no instances in the graph is refused: HubLink
would index nothing and score 0 on every question, looking like a result."""

from __future__ import annotations

from typing import Any

from hublab.errors import InputError
from hublab.graph.base import PAPER_TYPE
from hublab.graph.profile import hub_type_problem
from hublab.graph.vocabulary import normalise_type
from hublab.retrievers.registry import get_retriever_class

KEY = "hub_types"


def has_hub_types(retriever_type: str) -> bool:
    """The method takes ``hub_types`` (HubLink and plugins that declare the parameter)."""
    return KEY in get_retriever_class(retriever_type).declared_params()


def hub_types_for(retriever_type: str, given: list[str], source: Any) -> list[str] | None:
    """``--hub-type`` (normalised), else the graph's declared hub types ([] = the pipeline's or the method's
    default); None for a method without hub types, where ``--hub-type`` is refused."""
    if not has_hub_types(retriever_type):
        if given:
            raise InputError(f"--hub-type applies to methods with hub types (HubLink); {retriever_type!r} has none",
                             field="--hub-type")
        return None
    return [normalise_type(h) for h in given] or list(source.hub_types)


def apply_hub_types(cfg: Any, given: list[str], source: Any) -> list[str] | None:
    """Set ``cfg``'s ``retriever.params.hub_types`` as :func:`hub_types_for` decides (nothing when it decides []);
    returns the hub types the run will use, or None for a method without them."""
    wanted = hub_types_for(cfg.retriever_type, given, source)
    if wanted is None:
        return None
    if wanted:
        cfg.retriever_params[KEY] = wanted
    return list(cfg.retriever_params.get(KEY) or [PAPER_TYPE])


def refuse_empty_hub_types(cfg: Any, kg: Any, graph_shown: str, *, given: bool = False) -> None:
    """Raise when a hub type ``cfg`` uses has no instances in ``kg`` (the message lists the graph's most frequent
    types); nothing for a method without hub types."""
    if not has_hub_types(cfg.retriever_type):
        return
    why = hub_type_problem(kg, list(cfg.retriever_params.get(KEY) or [PAPER_TYPE]), graph_shown)
    if why:
        raise InputError(why, field="--hub-type" if given else "retriever.params.hub_types")
