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
from typing import Any

from hublab.llm.base import llm_free
from hublab.retrievers.base import Resources, RetrievalResult, Retriever
from hublab.retrievers.components.dense_index import DenseIndex
from hublab.retrievers.components.llm_json import ask_json
from hublab.retrievers.components.question_text import STOPWORDS, quoted_spans
from hublab.retrievers.components.results import empty
from hublab.retrievers.components.unit_text import PaperOf
from hublab.retrievers.components.units import answer_types, node_result_contexts, node_units
from hublab.retrievers.methods.four_step_focus.params import FourStepFocusParams
from hublab.retrievers.methods.four_step_focus.plan import (
    _CAPS_RE,
    TRIPLET_PROMPT,
    TRIPLET_SCHEMA,
    Linker,
    Plan,
    Term,
    Trace,
    Triplet,
    parse_plan,
)
from hublab.retrievers.methods.four_step_focus.ranking import Ranking


class FourStepFocusRetriever(Ranking, Retriever):
    """4StepFocus (spec/stark_4step.md §2); parameters:
    :class:`~hublab.retrievers.methods.four_step_focus.params.FourStepFocusParams`."""

    uses_llm = True
    default_pipeline = "four_step_focus_local.yaml"
    params_type = FourStepFocusParams

    def __init__(self, resources: Resources, **params: Any) -> None:
        super().__init__(resources, **params)
        self.types = answer_types(resources.graph, self.config.candidate_types)
        self._papers: PaperOf | None = None
        self.skb = resources.graph.answers_with_nodes
        self._nodes: DenseIndex | None = None
        self._linker: Linker | None = None
        self._predicates: list[str] | None = None
        self.last_trace = Trace()

    # ------------------------------------------------------------ resources
    @property
    def nodes(self) -> DenseIndex:
        if self._nodes is None:
            units = node_units(self.resources.graph, types=self.types if self.skb else None, add_rel=True)
            self._nodes = DenseIndex(self.resources, units, prefix="fsf_nodes", metric=self.config.distance_metric)
            self._pos = {u.node_id: i for i, u in enumerate(units)}
        return self._nodes

    @property
    def linker(self) -> Linker:
        if self._linker is None:
            self._linker = Linker(list(self.resources.graph.entities()), self.config.link_cutoff)
        return self._linker

    @property
    def predicates(self) -> list[str]:
        if self._predicates is None:
            self._predicates = sorted({t.predicate for t in self.resources.graph.triples()})
        return self._predicates

    def node_types(self) -> list[str]:
        return sorted({ty for e in self.resources.graph.entities() for ty in e.types if ty != "Literal"})

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        return {"nodes": self.nodes.build(progress=progress), "labels": len(self.linker.labels),
                "predicates": len(self.predicates)}

    # ------------------------------------------------------------ step 1
    def _rule_plan(self, question: str) -> Plan:
        consts = quoted_spans(question, min_len=2)
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
            if float(sims[best]) >= self.config.predicate_min_similarity:
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
                if key not in self.linker.by_label or key in vocab or key in STOPWORDS:
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
        rel = relation if (self.config.use_edge_types and relation in set(self.predicates)) else None
        out: set[str] = set()
        if self.config.direction == "any" or head_side:
            out |= {t.object.uid for t in g.outgoing(uid) if rel is None or t.predicate == rel}
        if self.config.direction == "any" or not head_side:
            out |= {t.subject.uid for t in g.incoming(uid) if rel is None or t.predicate == rel}
        return out

    def _link_constant(self, term: Term, trace: Trace) -> list[str]:
        ids = self.linker.link(term.name, term.type)
        if not ids and self.nodes.units:
            hits = self.nodes.search(term.name, 1)
            if hits and hits[0][1] >= self.config.link_min_similarity:
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
            if len(ids) > self.config.max_candidates:
                return None  # too broad to constrain anything: bounded
            out: set[str] = set()
            for uid in ids:
                out |= self._neighbours(uid, rel, head_side)
            return out

        for _ in range(self.config.max_rounds):
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
        if cands or self.config.max_hops < 2:
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
    # ------------------------------------------------------------ driver
    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        trace = Trace()
        self.last_trace = trace
        try:
            return self._steps(question, trace)
        except (KeyError, ValueError, TypeError, IndexError) as exc:  # a malformed plan must not stop a run
            trace.notes.append(repr(exc))
            return empty(f"four_step_focus failed: {type(exc).__name__}: {exc}")

    def _steps(self, question: str, trace: Trace) -> RetrievalResult:
        self.nodes  # noqa: B018 - builds the node index and position map
        if llm_free(self.resources.llm):
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
            contexts = self._rerank(question, contexts, trace)[: max(self.config.n_results, self.config.k_max)]
        else:
            contexts = self._rank_triples(question, cands, subst, trace)
            contexts = self._rerank(question, contexts, trace)
        return RetrievalResult(contexts=contexts, reason=None if contexts else "ranking returned nothing")

    def _failure(self, question: str, reason: str, trace: Trace) -> RetrievalResult:
        trace.notes.append(reason)
        if not self.config.backfill_on_failure:
            return empty(reason)
        ranked = self.nodes.search(question, self.config.k_max)
        contexts = node_result_contexts(self.resources.graph, ranked, self.config.n_results,
                                        expand_triples=not self.skb)
        for c in contexts:
            c.metadata["graph_supported"] = False
        return RetrievalResult(contexts=contexts, reason=f"{reason}; VSS backfill only")
