"""4StepFocus (Boer, Koch, Kramer 2024; spec/stark_4step.md §2): triplet prefiltering before ranking.

1. Triplets with variables from the question (LLM; LLM-free: quoted/capitalised constants + the predicate
   whose label is nearest to the question by embedding).
2. Variables are substituted against the graph until nothing changes (candidate sets per variable,
   bounded; edge types ignored by default, as in the paper).
3. The target variable's candidates are ranked by vector similarity; VSS backfills up to ``k_max`` below
   the graph-supported ones.
4. Optional pointwise LLM rerank of the top ``k_max`` (STaRK rubric, VSS-rank tie-break 0.1).

On a STaRK SKB the contexts are nodes; on an ORKG graph they are the triples that support each candidate.
The last query's trace (triplets, links, candidate-set sizes per round) is kept in ``last_trace``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from difflib import get_close_matches
from typing import Any

import numpy as np

from hublab.graph.model import Knowledge, Triple
from hublab.retrievers.base import Context, Resources, RetrievalResult, Retriever
from hublab.retrievers.dense import DenseIndex
from hublab.retrievers.llm_utils import ask_json, ask_text, is_llm_free
from hublab.retrievers.registry import register
from hublab.retrievers.units import empty, is_skb, node_document, node_result_contexts, node_units
from hublab.retrievers.vss import candidate_types_of

_QUOTED_RE = re.compile(r"'([^']{2,})'|\"([^\"]{2,})\"|‘([^’]{2,})’|“([^”]{2,})”")
_CAPS_RE = re.compile(r"\b([A-Z][\w\-]*(?:\s+(?:(?:of|for|and|the|on|in|de)\s+)*[A-Z][\w\-]*)*)")
_STOP_LABELS = frozenset({"which", "where", "there", "their", "these", "those", "about", "papers", "paper",
                          "publications", "publication", "false", "true", "other", "among", "between"})
_VAR_RE = re.compile(r"^\|?\?\s*(\w+)\|?$|^\|(x\d+)\|$")
_FLOAT_RE = re.compile(r"[-+]?\d*\.?\d+")

TRIPLET_SCHEMA = {
    "type": "object",
    "properties": {
        "triplets": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "head": {"type": "string"},
                    "head_type": {"type": "string"},
                    "relation": {"type": "string"},
                    "tail": {"type": "string"},
                    "tail_type": {"type": "string"},
                },
                "required": ["head", "relation", "tail"],
            },
        },
        "target": {"type": "string"},
        "properties": {"type": "string"},
    },
    "required": ["triplets", "target"],
}

TRIPLET_PROMPT = """Rewrite the question as triplets (head, relation, tail) to be looked up in a knowledge graph.
Each head or tail is either a constant (an exact entity name taken from the question) or a variable for an
unknown entity, written ?1, ?2, ... Use ?1 for the entity the question asks for; reuse a variable for the
same unknown. Give every end a type from the node types when you can. Use only relations from the list.
Put requirements no triplet can express (adjectives, years, topics) into "properties".

Node types: {node_types}
Relations: {edge_types}

Question: ---
{question}
---
Answer with JSON: {{"triplets": [{{"head": ..., "head_type": ..., "relation": ..., "tail": ..., "tail_type": ...}}],
"target": "?1", "properties": "..."}}"""

RERANK_PROMPT = """You judge whether a knowledge-base entry satisfies a query.
Query: {question}
Entry:
{doc}
Give a score between 0.0 and 1.0: 0.0 if no requirement of the query is met, 1.0 if there is explicit strong
evidence that every requirement is met, values in between for partial or weak evidence.
Answer with the number only."""


@dataclass(frozen=True)
class Term:
    name: str
    type: str | None = None
    is_var: bool = False


@dataclass(frozen=True)
class Triplet:
    head: Term
    relation: str | None
    tail: Term


@dataclass
class Plan:
    triplets: list[Triplet]
    target: str
    properties: str = ""
    source: str = "rules"


@dataclass
class Trace:
    plan: Plan | None = None
    links: dict[str, list[str]] = field(default_factory=dict)
    unlinked: list[str] = field(default_factory=list)
    rounds: list[dict[str, int]] = field(default_factory=list)
    filtered: int = 0
    backfilled: int = 0
    reranked: int = 0
    notes: list[str] = field(default_factory=list)


def _var_name(text: str) -> str | None:
    m = _VAR_RE.match(text.strip())
    return (m.group(1) or m.group(2)) if m else None


def parse_plan(data: dict[str, Any]) -> Plan:
    """LLM JSON → Plan. Raises ValueError when no usable triplet is there."""
    trips: list[Triplet] = []
    for item in data.get("triplets") or []:
        if not isinstance(item, dict):
            continue
        ends: list[Term] = []
        for side in ("head", "tail"):
            raw = str(item.get(side) or "").strip().strip("'\"")
            if not raw:
                break
            ty = item.get(f"{side}_type")
            ty = str(ty).strip() if ty else None
            var = _var_name(raw)
            ends.append(Term(var, ty, True) if var else Term(raw, ty, False))
        if len(ends) != 2:
            continue
        rel = str(item.get("relation") or "").strip() or None
        trips.append(Triplet(ends[0], rel, ends[1]))
    if not trips:
        raise ValueError("LLM returned no usable triplet")
    target = _var_name(str(data.get("target") or "?1")) or "1"
    return Plan(trips, target, str(data.get("properties") or ""), "llm")


class _Linker:
    """Constant → node ids: exact/difflib (cut-off 0.95) over lower-cased labels, then embedding top-1."""

    def __init__(self, entities: list[Knowledge], cutoff: float) -> None:
        self.cutoff = cutoff
        self.by_label: dict[str, list[Knowledge]] = {}
        for e in entities:
            self.by_label.setdefault(e.text.strip().lower(), []).append(e)
        self.labels = list(self.by_label)

    def link(self, name: str, type_name: str | None) -> list[str]:
        key = name.strip().lower()
        hits = self.by_label.get(key)
        if not hits:
            close = get_close_matches(key, self.labels, n=1, cutoff=self.cutoff)
            hits = self.by_label.get(close[0]) if close else None
        if not hits:
            return []
        typed = [e for e in hits if type_name and type_name in e.types]
        return [e.uid for e in (typed or hits)]


@register("four_step_focus")
class FourStepFocusRetriever(Retriever):
    def __init__(
        self,
        resources: Resources,
        *,
        k_max: int = 20,
        n_results: int = 20,
        candidate_types: list[str] | None = None,
        link_cutoff: float = 0.95,
        link_min_similarity: float = 0.55,
        predicate_min_similarity: float = 0.25,
        use_edge_types: bool = False,
        direction: str = "any",
        max_rounds: int = 10,
        max_candidates: int = 5000,
        backfill: bool = True,
        backfill_on_failure: bool = False,
        rerank: bool = True,
        distance_metric: str = "cosine",
        relation_bonus: float = 0.5,
        max_hops: int = 2,
        **params: Any,
    ) -> None:
        super().__init__(resources, **params)
        if params:
            raise ValueError(f"unknown 4StepFocus parameters: {sorted(params)}")
        if direction not in ("any", "strict"):
            raise ValueError(f"direction must be 'any' or 'strict', got {direction!r}")
        self.k_max = int(k_max)
        self.n_results = int(n_results)
        self.types = candidate_types_of(resources, candidate_types)
        self.link_cutoff = link_cutoff
        self.link_min_similarity = link_min_similarity
        self.predicate_min_similarity = predicate_min_similarity
        self.use_edge_types = use_edge_types
        self.direction = direction
        self.max_rounds = max_rounds
        self.max_candidates = max_candidates
        self.backfill = backfill
        self.backfill_on_failure = backfill_on_failure
        self.rerank = rerank
        self.metric = distance_metric
        self.relation_bonus = relation_bonus
        self.max_hops = int(max_hops)
        self.skb = is_skb(resources.graph)
        self._nodes: DenseIndex | None = None
        self._linker: _Linker | None = None
        self._predicates: list[str] | None = None
        self.last_trace = Trace()

    # ------------------------------------------------------------ resources
    @property
    def nodes(self) -> DenseIndex:
        if self._nodes is None:
            units = node_units(self.resources.graph, types=self.types if self.skb else None, add_rel=True)
            self._nodes = DenseIndex(self.resources, units, prefix="fsf_nodes", metric=self.metric)
            self._pos = {u.node_id: i for i, u in enumerate(units)}
        return self._nodes

    @property
    def linker(self) -> _Linker:
        if self._linker is None:
            self._linker = _Linker(list(self.resources.graph.entities()), self.link_cutoff)
        return self._linker

    @property
    def predicates(self) -> list[str]:
        if self._predicates is None:
            self._predicates = sorted({t.predicate for t in self.resources.graph.triples()})
        return self._predicates

    def node_types(self) -> list[str]:
        fn = getattr(self.resources.graph, "node_types", None)
        if callable(fn):
            return list(fn())
        return sorted({ty for e in self.resources.graph.entities() for ty in e.types if ty != "Literal"})

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        return {"nodes": self.nodes.build(), "labels": len(self.linker.labels), "predicates": len(self.predicates)}

    # ------------------------------------------------------------ step 1
    def _rule_plan(self, question: str) -> Plan:
        consts = [next(g for g in m.groups() if g) for m in _QUOTED_RE.finditer(question)]
        if not consts:
            first = question.split(" ", 1)[0]
            caps = [m.group(1) for m in _CAPS_RE.finditer(question) if m.group(1) != first]
            consts = caps + [c for c in self._label_mentions(question) if not any(c.lower() in x.lower() for x in caps)]
        rest = question
        for c in consts:
            rest = rest.replace(c, " ")
        relation = self._lexical_predicate(rest)
        if relation is None and self.predicates and rest.strip():
            sims = self.nodes.similarities(rest, self.predicates)
            best = int(sims.argmax())
            if float(sims[best]) >= self.predicate_min_similarity:
                relation = self.predicates[best]
        target_type = None
        lowered = question.lower()
        for ty in self.types or []:
            if ty.lower().replace("_", " ") in lowered:
                target_type = ty
                break
        target = Term("1", target_type, True)
        return Plan([Triplet(Term(c), relation, target) for c in consts], "1", "", "rules")

    def _label_mentions(self, question: str, max_words: int = 6) -> list[str]:
        """Word n-grams of the question that are node labels (longest first, non-overlapping). Single words
        must be 5+ letters and not predicate/type names, so everyday words do not become constraints."""
        words = re.findall(r"[\w\-]+", question)
        vocab = {p.lower() for p in self.predicates} | {t.lower() for t in self.node_types()}
        taken = [False] * len(words)
        found: list[str] = []
        for n in range(min(max_words, len(words)), 0, -1):
            for i in range(len(words) - n + 1):
                if any(taken[i : i + n]):
                    continue
                phrase = " ".join(words[i : i + n])
                key = phrase.lower()
                if key not in self.linker.by_label or key in vocab or key in _STOP_LABELS:
                    continue
                if n == 1 and (len(key) < 5 or key.isdigit() and len(key) != 4):
                    continue
                found.append(phrase)
                taken[i : i + n] = [True] * n
        return found

    def _lexical_predicate(self, text: str) -> str | None:
        """The longest predicate label that occurs verbatim (as words) in the question, if any."""
        lowered = f" {re.sub(r'[^a-z0-9]+', ' ', text.lower())} "
        found = [p for p in self.predicates if f" {re.sub(r'[^a-z0-9]+', ' ', p.lower()).strip()} " in lowered]
        return max(found, key=len) if found else None

    def _llm_plan(self, question: str) -> tuple[Plan | None, str | None]:
        llm = self.resources.llm
        assert llm is not None
        prompt = TRIPLET_PROMPT.format(
            node_types=", ".join(self.node_types()[:60]),
            edge_types=", ".join(self.predicates[:200]),
            question=question,
        )
        ans = ask_json(llm, prompt, TRIPLET_SCHEMA, max_tokens=600)
        if not ans.ok:
            return None, f"LLM triplets did not parse: {ans.error}"
        try:
            return parse_plan(ans.data), None
        except ValueError as exc:
            return None, f"LLM triplets did not parse: {exc}"

    # ------------------------------------------------------------ step 2
    def _neighbours(self, uid: str, relation: str | None, head_side: bool) -> set[str]:
        """Nodes across one edge from ``uid``; ``head_side``: uid is the triplet's head (follow outgoing)."""
        g = self.resources.graph
        rel = relation if (self.use_edge_types and relation in set(self.predicates)) else None
        out: set[str] = set()
        if self.direction == "any" or head_side:
            out |= {t.object.uid for t in g.outgoing(uid) if rel is None or t.predicate == rel}
        if self.direction == "any" or not head_side:
            out |= {t.subject.uid for t in g.incoming(uid) if rel is None or t.predicate == rel}
        return out

    def _link_constant(self, term: Term, trace: Trace) -> list[str]:
        ids = self.linker.link(term.name, term.type)
        if not ids and self.nodes.units:
            hits = self.nodes.search(term.name, 1)
            if hits and hits[0][1] >= self.link_min_similarity:
                ids = [hits[0][0].node_id or hits[0][0].key]
                trace.notes.append(f"linked {term.name!r} by embedding ({hits[0][1]:.2f})")
        if ids:
            trace.links[term.name] = ids
        else:
            trace.unlinked.append(term.name)
        return ids

    def _substitute(self, plan: Plan, trace: Trace) -> tuple[set[str] | None, dict[str, set[str] | None], str | None]:
        g = self.resources.graph
        prepared: list[tuple[list[str] | str, str | None, list[str] | str]] = []
        var_types: dict[str, str | None] = {}
        for tr in plan.triplets:
            ends: list[list[str] | str] = []
            for term in (tr.head, tr.tail):
                if term.is_var:
                    var_types.setdefault(term.name, term.type)
                    ends.append(term.name)
                else:
                    ends.append(self._link_constant(term, trace))
            h, t = ends
            if not isinstance(h, str) and not isinstance(t, str):
                continue  # constant–constant: nothing to solve
            if (isinstance(h, list) and not h) or (isinstance(t, list) and not t):
                continue  # unlinkable constant: the triplet is dropped (paper, Algorithm 3)
            prepared.append((h, tr.relation, t))
        if not prepared:
            why = "no triplet with a linkable entity"
            if trace.unlinked:
                why += f" (unlinkable: {', '.join(repr(u) for u in trace.unlinked)})"
            return None, {}, why
        allowed: dict[str, set[str] | None] = {}
        for var, ty in var_types.items():
            ents = g.entities_by_type(ty) if ty else []
            allowed[var] = {e.uid for e in ents} if ents else None
        subst: dict[str, set[str] | None] = dict.fromkeys(var_types)

        def update(var: str, new: set[str]) -> bool:
            if allowed.get(var) is not None:
                new = new & allowed[var]  # type: ignore[operator]
            cur = subst[var]
            res = new if cur is None else cur & new
            if res != cur:
                subst[var] = res
                return True
            return False

        def spread(ids: set[str], rel: str | None, head_side: bool) -> set[str] | None:
            if len(ids) > self.max_candidates:
                return None  # too broad to constrain anything: bounded
            out: set[str] = set()
            for uid in ids:
                out |= self._neighbours(uid, rel, head_side)
            return out

        for _ in range(self.max_rounds):
            changed = False
            for h, rel, t in prepared:
                if isinstance(h, list) and isinstance(t, str):
                    new = spread(set(h), rel, True)
                    changed |= new is not None and update(t, new)
                elif isinstance(h, str) and isinstance(t, list):
                    new = spread(set(t), rel, False)
                    changed |= new is not None and update(h, new)
                elif isinstance(h, str) and isinstance(t, str):
                    if subst[h] is not None:
                        new = spread(subst[h], rel, True)  # type: ignore[arg-type]
                        changed |= new is not None and update(t, new)
                    if subst[t] is not None:
                        new = spread(subst[t], rel, False)  # type: ignore[arg-type]
                        changed |= new is not None and update(h, new)
            trace.rounds.append({v: (-1 if s is None else len(s)) for v, s in subst.items()})
            if not changed:
                break
        target = subst.get(plan.target)
        if plan.target not in subst:
            return None, subst, f"the answer variable ?{plan.target} occurs in no triplet"
        if target is None:
            return None, subst, f"no triplet constrains the answer variable ?{plan.target}"
        if not target:
            return set(), subst, "empty candidate set after substitution"
        return target, subst, None

    def _widen_rules(
        self, plan: Plan, cands: set[str], subst: dict[str, set[str] | None], why: str | None, trace: Trace
    ) -> tuple[set[str] | None, dict[str, set[str] | None], str | None]:
        """LLM-free plans are one-hop guesses. A constant of the answer type answers itself (title lookups);
        if the plan gives nothing, each constant whose direct neighbours hold no node of the answer type is
        reached through its own intermediate variable instead (e.g. institution -> author -> paper)."""
        g = self.resources.graph
        target_type = next((tr.tail.type for tr in plan.triplets if tr.tail.is_var), None)
        if target_type:
            for ids in trace.links.values():
                cands = cands | {u for u in ids if target_type in g.types(u)}
        if cands or self.max_hops < 2:
            return cands, subst, (None if cands else why)
        widened: list[Triplet] = []
        changed = False
        for i, tr in enumerate(plan.triplets):
            ids = [] if tr.head.is_var else trace.links.get(tr.head.name, [])
            near: set[str] = set()
            for uid in ids:
                near |= self._neighbours(uid, tr.relation, True)
            if ids and not any(target_type is None or target_type in g.types(u) for u in near):
                hop = Term(f"hop{i}", None, True)
                widened += [Triplet(tr.head, None, hop), Triplet(hop, tr.relation, tr.tail)]
                changed = True
            else:
                widened.append(tr)
        if not changed:
            return cands, subst, why
        two_hop = Plan(widened, plan.target, plan.properties, "rules-2hop")
        trace.notes.append("one-hop rule triplets gave no candidate; retried through intermediate variables")
        trace.plan = two_hop
        return self._substitute(two_hop, trace)

    # ------------------------------------------------------------ step 3
    def _rank_nodes(self, question: str, cands: set[str], trace: Trace) -> list[Context]:
        pos = [self._pos[c] for c in cands if c in self._pos]
        ranked = self.nodes.search(question, len(pos), subset=pos)
        trace.filtered = len(ranked)
        contexts = [u.to_context(s) for u, s in ranked]
        for c in contexts:
            c.metadata["graph_supported"] = True
        if self.backfill and len(contexts) < self.k_max:
            have = {c.metadata.get("node_id") for c in contexts}
            extra = [(u, s) for u, s in self.nodes.search(question, self.k_max * 2) if u.node_id not in have]
            extra = extra[: self.k_max - len(contexts)]
            trace.backfilled = len(extra)
            for u, s in extra:
                ctx = u.to_context(s)
                ctx.metadata["graph_supported"] = False
                contexts.append(ctx)
        return contexts

    def _rank_triples(
        self, question: str, cands: set[str], subst: dict[str, set[str] | None], trace: Trace
    ) -> list[Context]:
        g = self.resources.graph
        anchors: set[str] = {uid for ids in trace.links.values() for uid in ids}
        for ids in subst.values():
            if ids is not None and len(ids) <= self.max_candidates:
                anchors |= ids
        support: dict[str, Triple] = {}
        for c in sorted(cands):
            for t in g.neighbours(c):
                other = t.subject.uid if t.object.uid == c else t.object.uid
                if other in anchors:
                    support.setdefault(t.render(), t)
            if len(support) > 2000:
                trace.notes.append("supporting triples capped at 2000")
                break
        texts = list(support)
        # The constants dominate every supporting triple's text, so also compare what is left of the
        # question with what each triple adds (predicate + the candidate's label), and favour the
        # relations the plan names (soft, since edge types are not enforced in substitution).
        rest = question
        for name in trace.links:
            rest = rest.replace(name, " ")
        relations = {tr.relation for tr in trace.plan.triplets} if trace.plan else set()
        tails = []
        for x in texts:
            t = support[x]
            tails.append(f"{t.predicate} {(t.object if t.object.uid in cands else t.subject).text}")
        sims = (
            self.nodes.similarities(question, texts)
            + self.nodes.similarities(rest, tails)
            + np.asarray([self.relation_bonus if support[x].predicate in relations else 0.0 for x in texts])
        )
        order = sorted(range(len(texts)), key=lambda i: -float(sims[i]))
        trace.filtered = len(cands)
        contexts = [Context(texts[i], support[texts[i]], float(sims[i]), {"graph_supported": True}) for i in order]
        if self.backfill and len(contexts) < self.n_results:
            have = set(texts)
            ranked = self.nodes.search(question, self.k_max)
            extra = [c for c in node_result_contexts(g, ranked, self.n_results * 2, expand_triples=True)
                     if c.text not in have][: self.n_results - len(contexts)]
            trace.backfilled = len(extra)
            for c in extra:
                c.metadata["graph_supported"] = False
            contexts += extra
        return contexts[: self.n_results]

    # ------------------------------------------------------------ step 4
    def _rerank(self, question: str, contexts: list[Context], trace: Trace) -> list[Context]:
        llm = self.resources.llm
        if not self.rerank or is_llm_free(llm) or not contexts:
            return contexts
        assert llm is not None
        head, tail = contexts[: self.k_max], contexts[self.k_max :]
        n = len(head)
        scored: list[tuple[float, int, Context]] = []
        failures = 0
        for idx, ctx in enumerate(head):
            doc = ctx.text
            node_id = ctx.metadata.get("node_id")
            if self.skb and node_id is not None:
                ent = self.resources.graph.entity(str(node_id))
                doc = node_document(self.resources.graph, ent) if ent else doc
            text, err = ask_text(llm, RERANK_PROMPT.format(question=question, doc=doc[:4000]), max_tokens=8)
            m = _FLOAT_RE.search(text or "")
            if err or not m:
                failures += 1
                llm_score = 0.0
            else:
                llm_score = min(1.0, max(0.0, float(m.group())))
            scored.append((llm_score + 0.1 * (n - idx) / n, idx, ctx))
        if failures == n:
            trace.notes.append("rerank: no LLM score parsed; VSS order kept")
            return contexts
        trace.reranked = n - failures
        scored.sort(key=lambda x: (-x[0], x[1]))
        for s, _, c in scored:
            c.metadata["rerank_score"] = s
        return [c for _, _, c in scored] + tail

    # ------------------------------------------------------------ driver
    def retrieve(
        self,
        question: str,
        topic_entity_id: str | None = None,
        topic_entity_value: str | None = None,
    ) -> RetrievalResult:
        trace = Trace()
        self.last_trace = trace
        if not question or not question.strip():
            return empty("empty question")
        try:
            return self._retrieve(question, trace)
        except (KeyError, ValueError, TypeError, IndexError) as exc:  # a malformed plan must not stop a run
            trace.notes.append(repr(exc))
            return empty(f"four_step_focus failed: {type(exc).__name__}: {exc}")

    def _retrieve(self, question: str, trace: Trace) -> RetrievalResult:
        self.nodes  # noqa: B018 - builds the node index and position map
        if is_llm_free(self.resources.llm):
            plan, err = self._rule_plan(question), None
        else:
            plan, err = self._llm_plan(question)
        trace.plan = plan
        if plan is None or not plan.triplets:
            return self._failure(question, err or "no entity found in the question to build triplets from", trace)
        cands, subst, why = self._substitute(plan, trace)
        if plan.source == "rules" and cands is not None:
            cands, subst, why = self._widen_rules(plan, cands, subst, why, trace)
        if not cands:
            return self._failure(question, why or "empty candidate set", trace)
        if self.skb:
            contexts = self._rank_nodes(question, cands, trace)
            contexts = self._rerank(question, contexts, trace)[: max(self.n_results, self.k_max)]
        else:
            contexts = self._rank_triples(question, cands, subst, trace)
            contexts = self._rerank(question, contexts, trace)
        return RetrievalResult(contexts=contexts, reason=None if contexts else "ranking returned nothing")

    def _failure(self, question: str, reason: str, trace: Trace) -> RetrievalResult:
        trace.notes.append(reason)
        if not self.backfill_on_failure:
            return empty(reason)
        ranked = self.nodes.search(question, self.k_max)
        contexts = node_result_contexts(self.resources.graph, ranked, self.n_results, expand_triples=not self.skb)
        for c in contexts:
            c.metadata["graph_supported"] = False
        return RetrievalResult(contexts=contexts, reason=f"{reason}; VSS backfill only")
