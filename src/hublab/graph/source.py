"""What ``--graph`` names: a built-in graph, a graph declared in ``params.yaml`` (``user_graphs.graphs``), a path to an
RDF file, or a SPARQL endpoint URL; resolved once into a :class:`GraphSource` by the backend that claims it, and read
by that backend (:mod:`hublab.graph.backends`, the one door every command and the Python API go through). This module
holds what a resolved graph is and the ``user_graphs`` settings that open and key it.

A file or an endpoint gets a name keyed by its content (``<file stem>-<12 hex of its sha256>``;
``sparql-<12 hex of its content fingerprint>``, whatever its URL or port): indices (``models/<name>__<retriever>/``)
and run identities use it, so a changed graph is never searched with an index built for the old one, and the same
file gives the same name anywhere. The settings that
shape a user's graph model (its label predicates and its type predicates, each when not the default list) are part of
that key too (:attr:`GraphSource.model`): a changed label or type setting is a new graph model, with its own index and
its own runs; the default settings add nothing to the key.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from hublab.config import Settings
from hublab.errors import InputError
from hublab.graph.endpoint import EndpointSettings, shown
from hublab.graph.vocabulary import Vocabulary, normalise_type
from hublab.limits import ReadLimits
from hublab.params_schema import IRI

#: the params.yaml section of users' graphs: label and type predicates, endpoint deadlines, declared graphs and runs
SECTION = "user_graphs"


@dataclass(frozen=True)
class GraphSource:
    """One graph as a run sees it."""

    arg: str  #: what the user gave (a name, a path, a URL)
    kind: str  #: "builtin", "declared", "file" or "endpoint"
    location: str  #: the file's path or the endpoint's URL (may hold credentials: print :attr:`shown`)
    name: str  #: the name indices, runs and reports use
    digest: str  #: sha256 of the file, or of the endpoint's content fingerprint
    hub_types: tuple[str, ...] = ()  #: HubLink's hub types declared with the graph (params.yaml), if any
    triples: int | None = field(default=None, compare=False)  #: the endpoint's triple count, when known
    #: the endpoint's (triple count, content digest) when resolved: the graph read must still have it
    fingerprint: tuple[int, str] | None = field(default=None, compare=False)
    #: 12 hex of the settings that shape the graph model when they are not the defaults (label and type
    #: predicates), else ""; part of :attr:`digest` (a run's identity) and of :attr:`index_name` (its index folder)
    model: str = ""
    #: which settings :attr:`model` keys (:func:`model_kind`): ``labels``, ``types`` or ``labels-types``
    model_kind: str = field(default="labels", compare=False)

    @property
    def index_name(self) -> str:
        """The name of the graph's index folders: :attr:`name`, plus what the graph model's key is of and the key,
        when it has one (``<name>-labels-<key>``, ``<name>-types-<key>``)."""
        return f"{self.name}-{self.model_kind}-{self.model}" if self.model else self.name

    @property
    def shown(self) -> str:
        return shown(self.location) if self.kind == "endpoint" else self.location

    def __repr__(self) -> str:  # the dataclass's would print an endpoint's credentials (arg, location)
        return (f"GraphSource(arg={shown(self.arg)!r}, kind={self.kind!r}, location={self.shown!r}, "
                f"name={self.name!r}, digest={self.digest!r})")

    @property
    def builtin(self) -> bool:
        """One of the thesis's graphs (ORKG ids; the research field is its root entity)."""
        return self.kind == "builtin"


@lru_cache(maxsize=64)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes (memoised per path, size and modification time)."""
    st = path.stat()
    return _file_digest(str(path.resolve()), st.st_size, st.st_mtime_ns)


def declared_graphs(st: Settings) -> dict[str, dict]:
    """``params.yaml: user_graphs.graphs``: name → {source: file or URL, hub_types: [...]}, checked (a relative
    file path is relative to the project root)."""
    user = st.section(SECTION).get("graphs") or {}
    if not isinstance(user, dict):
        raise InputError("expected a mapping of graph name -> {source, hub_types}", file=str(st.root / "params.yaml"),
                         field=f"{SECTION}.graphs")
    out: dict[str, dict] = {}
    for name, spec in user.items():
        where = f"{SECTION}.graphs.{name}"
        if not isinstance(spec, dict) or not isinstance(spec.get("source"), str):
            raise InputError("expected {source: <RDF file or SPARQL endpoint URL>, hub_types: [<class IRI>, ...]}",
                             file=str(st.root / "params.yaml"), field=where)
        hub = spec.get("hub_types") or []
        if not isinstance(hub, list) or not all(isinstance(h, str) for h in hub):
            raise InputError("expected a list of class IRIs", file=str(st.root / "params.yaml"),
                             field=f"{where}.hub_types")
        if str(name) in st.graph_names():
            raise InputError("a built-in graph has this name; choose another", file=str(st.root / "params.yaml"),
                             field=where)
        out[str(name)] = {"source": spec["source"], "hub_types": [normalise_type(h) for h in hub]}
    return out


def vocabulary(st: Settings) -> Vocabulary:
    """The label and type predicates of ``params.yaml: user_graphs.label_predicates`` and ``type_predicates`` (the
    default lists when unset), or of :func:`with_label_predicates` and :func:`with_type_predicates`.

    Raises:
        InputError: either key not a list of strings, located at the key.
    """
    section = st.section(SECTION)
    found: dict[str, list[str] | None] = {}
    for key in ("label_predicates", "type_predicates"):
        preds = section.get(key)
        if preds is not None and (not isinstance(preds, list) or not all(isinstance(p, str) for p in preds)):
            raise InputError("expected a list of predicate IRIs", file=str(st.root / "params.yaml"),
                             field=f"{SECTION}.{key}")
        found[key] = preds
    return Vocabulary.from_iris(found["label_predicates"], found["type_predicates"])


def _checked_iris(predicates: list[str] | tuple[str, ...], option: str) -> list[str]:
    """The predicates of one call as strings, once each, in the order given.

    Raises:
        InputError: a predicate that is not an absolute IRI, naming ``option``.
    """
    bad = [p for p in predicates if not IRI.match(str(p))]
    if bad:
        raise InputError(f"expected a predicate IRI (http://…), got {bad[0]!r}", field=option)
    return list(dict.fromkeys(str(p) for p in predicates))


def with_label_predicates(st: Settings, predicates: list[str] | tuple[str, ...] | None) -> Settings:
    """``st`` with the label predicates of one call (``--label-predicate``, the API's ``label_predicates=``) ahead
    of ``params.yaml``'s, in the order given (a node's label is the first it has); ``st`` when none are given.

    Raises:
        InputError: a predicate that is not an absolute IRI (``http://…``, ``https://…``, ``urn:…``).
    """
    if not predicates:
        return st
    given = _checked_iris(predicates, "--label-predicate")
    rest = [str(p) for p in vocabulary(st).label_predicates if str(p) not in given]
    return st.with_section(SECTION, label_predicates=[*given, *rest])


def with_type_predicates(st: Settings, predicates: list[str] | tuple[str, ...] | None) -> Settings:
    """``st`` with the type predicates of one call (``--type-predicate``, the API's ``type_predicates=``) ahead of
    ``params.yaml``'s; ``st`` when none are given. A node's types are every class any type predicate names, so the
    order changes nothing but the listing. ``rdf:type`` stays a type predicate, after the given ones unless they
    hold it: a graph typed partly by ``rdf:type`` keeps those types.

    Args:
        st: the project's settings (or a call's, e.g. after :func:`with_label_predicates`).
        predicates: absolute predicate IRIs, e.g. ``http://www.wikidata.org/prop/direct/P31``.

    Returns:
        The settings with ``user_graphs.type_predicates`` set to the given predicates, then the configured ones.

    Raises:
        InputError: a predicate that is not an absolute IRI (``http://…``, ``https://…``, ``urn:…``).
    """
    if not predicates:
        return st
    given = _checked_iris(predicates, "--type-predicate")
    rest = [str(p) for p in vocabulary(st).type_predicates if str(p) not in given]
    return st.with_section(SECTION, type_predicates=[*given, *rest])


def model_kind(vocab: Vocabulary) -> str:
    """What in ``vocab`` differs from the defaults, as the index folder names it (:attr:`GraphSource.index_name`).

    Args:
        vocab: a graph's vocabulary (:func:`vocabulary`).

    Returns:
        ``labels``, ``types`` or ``labels-types``; "" when both lists are the defaults (type predicates compared as
        sets: their order changes no type).
    """
    default = Vocabulary()
    parts = [name for name, differs in (("labels", vocab.label_predicates != default.label_predicates),
                                         ("types", set(vocab.type_predicates) != set(default.type_predicates)))
             if differs]
    return "-".join(parts)


def model_key(st: Settings) -> str:
    """12 hex of the graph-model settings of a user's graph (``st``'s label and type predicates) when they differ
    from the defaults, else "": the default adds nothing to a graph's key, name or index folder.

    The label predicates are keyed in their order (the first a node has labels it); the type predicates, when not
    ``rdf:type`` alone, as a sorted set (a node's types are every class any of them names, whatever their order).
    A vocabulary whose type predicates are the default keys exactly as the label predicates alone always did.
    """
    vocab = vocabulary(st)
    kind = model_kind(vocab)
    if not kind:
        return ""
    parts = ["labels", *map(str, vocab.label_predicates)]
    if "types" in kind:
        parts += ["types", *sorted(set(map(str, vocab.type_predicates)))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def endpoint_settings(st: Settings) -> EndpointSettings:
    return EndpointSettings.from_params(st.section(SECTION).get("endpoint"))


def store_settings(st: Settings) -> tuple[str, float]:
    """``params.yaml: user_graphs.store``: where a graph file is kept (``auto``, ``memory`` or ``disk``) and, for
    ``auto``, the size in MB from which a file goes to the on-disk store (:mod:`hublab.graph.store`)."""
    sec = dict(st.section(SECTION).get("store") or {})
    return str(sec.get("mode") or "auto"), float(sec.get("above_mb") if sec.get("above_mb") is not None else 64)


def read_limits(st: Settings) -> ReadLimits:
    """``params.yaml: user_graphs.limits``: how far reading a graph may expand (defaults when unset)."""
    return ReadLimits.from_params(st.section(SECTION).get("limits"))
