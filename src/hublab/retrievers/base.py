"""The Retriever interface and the resources (graph, embedder, LLM, vector store) it is given.

Retrievers depend only on these interfaces, never on concrete backends, so the same HubLink code
runs over rdflib or a SPARQL endpoint, Milvus Lite or a cluster, OpenAI or llama.cpp or no LLM.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

import pydantic

from hublab import observability
from hublab.embedding.base import Embedder
from hublab.errors import InputError
from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Triple
from hublab.llm.base import LLM
from hublab.vectorstore.base import VectorStore

#: a method class -> the pydantic model of its declared parameters (``Retriever._params_model``)
_PARAMS_MODELS: dict[type, Any] = {}
#: a class's declared parameters, worked out once: each field's type is checked by building a pydantic adapter
#: (~1 ms a field), and a study asks for them on every trial's validation and every value of its space
_DECLARED: dict[type, dict[str, tuple[Any, Any]]] = {}


@dataclass
class Context:
    """One retrieved context item. ``text`` is the canonical triple string for triple contexts."""

    text: str
    triple: Triple | None = None
    score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class RetrievalResult:
    contexts: list[Context] = field(default_factory=list)
    answer: str | None = None
    reason: str | None = None  # why the result is empty/partial (unlinkable entity, LLM failure, ...)
    sources: list[dict[str, str]] = field(default_factory=list)  # e.g. [{"id": "R1", "title": ..., "doi": ...}]
    #: One entry per LLM step that fell back to its LLM-free form ("partial_answer: timeout"); the runner
    #: counts them (``n_llm_fallbacks``) so a silently degraded run is visible.
    fallbacks: list[str] = field(default_factory=list)

    @property
    def context_strings(self) -> list[str]:
        return [c.text for c in self.contexts]


@dataclass
class Resources:
    """What a retriever may use. Any of them may be None if the pipeline does not configure it."""

    graph: KnowledgeGraph
    embedder: Embedder | None = None
    llm: LLM | None = None
    vector_store: VectorStore | None = None
    index_name: str = ""  # collection/namespace for this graph + retriever config
    cache_dir: str | None = None
    index_dir: str | None = None  # folder for a retriever's own index files (manifests), versioned with the index
    root_entity_ids: list[str] = field(default_factory=list)  # the graph's entry points (ORKG research field)


#: Most documents a RETRIEVER span records (an LLM-free HubLink returns ~200 triples; a baseline may return more)
MAX_SPAN_DOCUMENTS = 500


def context_documents(contexts: list[Context], limit: int = MAX_SPAN_DOCUMENTS) -> list[dict[str, Any]]:
    """Contexts as MLflow-style retriever documents (``page_content``, ``metadata``, ``id``), best first: what a
    RETRIEVER span shows. ``id`` is the triple's subject id where the context is a triple."""
    docs = []
    for rank, c in enumerate(contexts[:limit], start=1):
        meta: dict[str, Any] = {"rank": rank}
        if c.score is not None:
            meta["score"] = float(c.score)
        meta.update({str(k): v if isinstance(v, str | int | float | bool) else str(v) for k, v in c.metadata.items()})
        docs.append({"page_content": c.text, "metadata": meta, "id": c.triple.subject.uid if c.triple else None})
    return docs


def _checkable(tp: Any) -> Any:
    """The annotation if pydantic can validate it, else Any (e.g. a Protocol-typed hook object)."""
    try:
        pydantic.TypeAdapter(tp)
    except Exception:  # noqa: BLE001 - pydantic raises several schema errors
        return Any
    return tp


def _dataclass_params(params_type: type | None) -> dict[str, tuple[Any, Any]]:
    """``{name: (type, default)}`` of a method's parameter dataclass (:attr:`Retriever.params_type`), a class's own
    fields before those it inherits (a method's own parameters first, then the shared ones of its base dataclass)."""
    if params_type is None:
        return {}
    try:
        hints = typing.get_type_hints(params_type, include_extras=True)
    except Exception:  # noqa: BLE001 - an unresolvable annotation is checked as Any
        hints = {}
    fields = {f.name: f for f in dataclasses.fields(params_type)}
    own_first = [name for klass in params_type.__mro__ for name in vars(klass).get("__annotations__", {})
                 if name in fields]
    out: dict[str, tuple[Any, Any]] = {}
    for name in dict.fromkeys([*own_first, *fields]):
        f = fields[name]
        default = f.default if f.default is not dataclasses.MISSING else ...
        out[name] = (_checkable(hints.get(name, Any)), default)
    return out


class ParamsDeclarationError(InputError, TypeError):
    """A method that declares its parameters where HubLab does not read them. An :class:`InputError`, so the
    command line says it in one located line (the class's file) instead of a traceback from a plugin's import;
    still a ``TypeError`` for code that catches one."""


def _source_file(klass: type) -> str | None:
    try:
        return inspect.getsourcefile(klass)
    except TypeError:  # a class defined where no file is (the REPL, exec)
        return None


def check_params_declaration(cls: type[Retriever]) -> None:
    """Refuse a method whose parameters would silently not exist: keyword-only ``__init__`` arguments (the old way of
    declaring parameters; they are not read) or a ``params_type`` that drops its parent class's parameters.

    Raises :class:`ParamsDeclarationError` (a ``TypeError``) naming the class and its file; called when a method
    is registered or looked up, and by :meth:`Retriever.declared_params`."""
    params_type = cls.params_type
    if params_type is not None and not dataclasses.is_dataclass(params_type):
        raise ParamsDeclarationError(f"{cls.__qualname__}.params_type must be a dataclass, not {params_type!r}",
                                     file=_source_file(cls), field="params_type")
    for klass in cls.__mro__:
        if klass is Retriever or not issubclass(klass, Retriever):
            continue
        parent_type = vars(klass).get("params_type")
        if parent_type is not None and params_type is not None and not issubclass(params_type, parent_type):
            raise ParamsDeclarationError(
                f"{cls.__qualname__}.params_type ({params_type.__qualname__}) must subclass {klass.__qualname__}'s "
                f"({parent_type.__qualname__}), whose parameters it inherits", file=_source_file(cls),
                field="params_type")
        init = vars(klass).get("__init__")
        if init is None:
            continue
        keyword_only = [p.name for p in inspect.signature(init).parameters.values() if p.kind is p.KEYWORD_ONLY]
        if keyword_only:
            raise ParamsDeclarationError(
                f"{klass.__qualname__}.__init__ declares keyword-only parameters {keyword_only}, which are not read "
                f"as parameters of {cls.__qualname__}: declare them as a `params_type` dataclass (fields with types, "
                "ranges and defaults; docs/adding-a-retriever.md), and take `**params` in __init__",
                file=_source_file(klass), field="__init__")


class Retriever(ABC):
    """A KGQA retriever. Must return the triples it used (thesis §7.1.4), ranked best first.

    A method declares its parameters as a dataclass, its :attr:`params_type` (fields with types, defaults, ranges
    via ``Annotated[..., pydantic.Field(...)]`` and choices via ``Literal``; parameters shared by a family of
    methods live in a base dataclass the method's dataclass inherits from); :meth:`validate_params` checks a
    pipeline's ``retriever.params`` against them before anything runs, and ``__init__`` builds the one copy the
    retriever reads, :attr:`config`. A method implements :meth:`_retrieve`; the common preamble (empty question,
    output bound) lives in :meth:`retrieve`.
    """

    name: ClassVar[str] = "retriever"
    # ---- the method's facts, declared once here and read through the registry by reports, tuning and tracking
    #: The method's name in the thesis's result tables (``graph_variants.csv``); None: the thesis does not report it.
    thesis_name: ClassVar[str | None] = None
    #: The retriever's own steps prompt an LLM when the pipeline configures one (with ``llm.backend: none`` they
    #: run their deterministic LLM-free substitute); the pipeline's optional pipes are not counted here.
    uses_llm: ClassVar[bool] = False
    #: The LLM-free pipeline file (under ``pipelines/``) that ``hublab report compare`` and ``hublab tune-all``
    #: run by default; None: the method is not in the default comparison.
    default_pipeline: ClassVar[str | None] = None
    #: Where the method sits in the default comparison (sorted by group, then name): 0 KGQA methods,
    #: 1 single-ranking IR baselines, 2 rank-fusion baselines.
    compare_group: ClassVar[int] = 0
    #: Prompts the method sends: registry name → (module, template attribute, the boolean parameter that turns the
    #: step on, or None). Empty: the prompt registry takes the method module's ``*_PROMPT`` constants.
    prompts: ClassVar[dict[str, tuple[str, str, str | None]]] = {}
    #: Parameters every method accepts; the base applies them unless the method declares its own.
    #: ``max_output_triples`` bounds the returned contexts, so methods can be compared at the same output size.
    COMMON_PARAMS: ClassVar[dict[str, tuple[Any, Any]]] = {
        "max_output_triples": (Annotated[int, pydantic.Field(ge=1)] | None, None),
    }
    #: The method's parameters: a dataclass (fields: types with ranges via ``Annotated``, ``Literal`` choices,
    #: defaults), subclassing the parent method's ``params_type`` where the parent has one. None: no parameters
    #: besides :attr:`COMMON_PARAMS`.
    params_type: ClassVar[type | None] = None
    #: The validated parameters, an instance of :attr:`params_type` (None without one): the retriever's only copy.
    config: Any = None
    max_output_triples: int | None = None

    def __init__(self, resources: Resources, **params: Any) -> None:
        self.resources = resources
        if self.params_type is not None:
            self.config = self.params_type(**params)
        elif params:
            raise TypeError(f"{type(self).__qualname__} declares no parameters (no params_type); got {sorted(params)}")

    # ------------------------------------------------------------ parameters
    @classmethod
    def declared_params(cls) -> dict[str, tuple[Any, Any]]:
        """``{name: (type, default)}`` of the fields of :attr:`params_type` (along the class chain: a method's
        dataclass inherits its parent's), plus the :attr:`COMMON_PARAMS` the method does not declare itself."""
        known = _DECLARED.get(cls)
        if known is None:
            check_params_declaration(cls)  # raises for a class that declares them wrongly: never cached
            known = _dataclass_params(cls.params_type)
            for key, spec in cls.COMMON_PARAMS.items():
                known.setdefault(key, spec)
            _DECLARED[cls] = known
        return dict(known)

    @classmethod
    def create(cls, resources: Resources, params: dict[str, Any]) -> Retriever:
        """Construct from validated parameters; common parameters the method does not declare itself are
        applied by the base."""
        own = {k: v for k, v in params.items() if k not in cls.COMMON_PARAMS or cls._declares(k)}
        retriever = cls(resources, **own)
        for key in cls.COMMON_PARAMS:
            if key in params:
                setattr(retriever, key, params[key])
        return retriever

    @classmethod
    def _declares(cls, key: str) -> bool:
        return cls.params_type is not None and key in {f.name for f in dataclasses.fields(cls.params_type)}

    @classmethod
    def _params_model(cls) -> Any:
        """The pydantic model of the declared parameters, made once per class: building one takes ~15 ms, and a
        study validates every trial's parameters (and ``check_space`` every factor's values) through it."""
        model = _PARAMS_MODELS.get(cls)
        if model is None:
            # strict: YAML's types are taken as written (no "30" -> 30, no true -> 1, no "false" -> True)
            model = pydantic.create_model(  # type: ignore[call-overload]
                f"{cls.__name__}Params",
                __config__=pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=True, strict=True),
                **cls.declared_params(),
            )
            _PARAMS_MODELS[cls] = model
        return model

    @classmethod
    def validate_params(cls, params: dict[str, Any], *, source: str | None = None) -> dict[str, Any]:
        """Check names, types and ranges; return the given parameters with values coerced to their types.

        Raises :class:`InputError` naming the pipeline file and ``retriever.params.<key>``, listing valid keys.
        """
        declared = cls.declared_params()
        valid = ", ".join(sorted(declared)) or "(none)"
        if not isinstance(params, dict):
            raise InputError("expected a mapping", file=source, field="retriever.params")
        unknown = sorted(set(params) - set(declared))
        if unknown:
            raise InputError(f"unknown parameter for retriever {cls.name!r}; valid: {valid}", file=source,
                             field=f"retriever.params.{unknown[0]}")
        model = cls._params_model()
        try:
            checked = model(**params)
        except pydantic.ValidationError as exc:
            from hublab.errors import raise_all
            from hublab.redact import scrub

            errors = []
            for err in exc.errors():
                key = ".".join(str(p) for p in err.get("loc", ()))
                got = scrub(repr(err.get("input")))[:120]
                errors.append(InputError(f"{err.get('msg', 'invalid value')} (got {got})", file=source,
                                         field=f"retriever.params.{key}"))
            raise_all(errors)
        return {k: getattr(checked, k) for k in params}

    # ------------------------------------------------------------ lifecycle
    def index(self, *, progress: bool = True) -> dict[str, Any]:
        """Build or update whatever index the retriever needs; return stats. Default: nothing."""
        return {}

    def ensure_ready(self, *, progress: bool = False) -> None:
        """Called once before the first question: make the index usable (build or resume it) or raise a
        :class:`HubLabError` saying why it is not. Default: :meth:`index`, so that an index a method would build
        lazily on its first question is built here, where the runner times it apart from the questions (and shows
        it with ``progress``), and the first question's runtime is the question's alone."""
        self.index(progress=progress)

    def retrieve(
        self,
        question: str,
        topic_entity_id: str | None = None,
        topic_entity_value: str | None = None,
    ) -> RetrievalResult:
        """Never raises on bad input: returns an empty-but-valid result with ``reason`` set.

        Traced as a RETRIEVER span (``hublab.observability``; a no-op unless a tracked run installed a tracer)
        whose outputs are the returned contexts as documents."""
        with observability.span(f"retrieve ({self.name})", observability.RETRIEVER,
                                inputs={"question": question, "topic_entity_id": topic_entity_id,
                                        "topic_entity_value": topic_entity_value}) as sp:
            if not isinstance(question, str) or not question.strip():
                result = RetrievalResult(reason="empty question")
            else:
                result = self._call(question, topic_entity_id, topic_entity_value)
                if self.max_output_triples is not None:
                    result.contexts = result.contexts[: self.max_output_triples]
            if sp.recording:
                sp.set_outputs(context_documents(result.contexts))
                sp.set_attributes({"retriever": self.name, "n_contexts": len(result.contexts),
                                   "answer": result.answer or "", "reason": result.reason or "",
                                   "fallbacks": list(result.fallbacks)})
            return result

    def _call(self, question: str, topic_entity_id: str | None, topic_entity_value: str | None) -> RetrievalResult:
        """How ``retrieve`` calls the method: ``_retrieve`` as it is (a family of methods may wrap it, e.g. turn an
        unexpected failure into the question's ``reason``)."""
        return self._retrieve(question, topic_entity_id, topic_entity_value)

    @abstractmethod
    def _retrieve(
        self, question: str, topic_entity_id: str | None, topic_entity_value: str | None
    ) -> RetrievalResult:
        """The method itself; ``question`` is non-empty."""
