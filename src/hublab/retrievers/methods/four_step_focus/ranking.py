"""4StepFocus steps 3–4: rank the target variable's candidates (nodes on a STaRK SKB, supporting triples on
ORKG) with VSS backfill, then the optional pointwise LLM rerank."""

from __future__ import annotations

import numpy as np

from hublab.graph.model import Triple
from hublab.llm.base import llm_free
from hublab.retrievers.base import Context
from hublab.retrievers.components.llm_json import ask_text
from hublab.retrievers.components.unit_text import PaperOf, unit_text
from hublab.retrievers.components.units import node_document, node_result_contexts
from hublab.retrievers.methods.four_step_focus.plan import _FLOAT_RE, RERANK_PROMPT, Trace


class Ranking:
    """Mixin of :class:`FourStepFocusRetriever`: the ranking and rerank steps (uses its index and params)."""

    def _rank_nodes(self, question: str, cands: set[str], trace: Trace) -> list[Context]:
        pos = [self._pos[c] for c in cands if c in self._pos]
        ranked = self.nodes.search(question, len(pos), subset=pos)
        trace.filtered = len(ranked)
        contexts = [u.to_context(s) for u, s in ranked]
        for c in contexts:
            c.metadata["graph_supported"] = True
        if self.config.backfill and len(contexts) < self.config.k_max:
            have = {c.metadata.get("node_id") for c in contexts}
            extra = [(u, s) for u, s in self.nodes.search(question, self.config.k_max * 2) if u.node_id not in have]
            extra = extra[: self.config.k_max - len(contexts)]
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
            if ids is not None and len(ids) <= self.config.max_candidates:
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
        if self._papers is None and self.config.context != "none":
            self._papers = PaperOf(g)
        matched = [unit_text(support[x], self.config.triple_text, self.config.context, self._papers) for x in texts]
        sims = (
            self.nodes.similarities(question, matched)
            + self.nodes.similarities(rest, tails)
            + np.asarray([self.config.relation_bonus if support[x].predicate in relations else 0.0 for x in texts])
        )
        order = sorted(range(len(texts)), key=lambda i: -float(sims[i]))
        trace.filtered = len(cands)
        contexts = [Context(texts[i], support[texts[i]], float(sims[i]), {"graph_supported": True}) for i in order]
        if self.config.backfill and len(contexts) < self.config.n_results:
            have = set(texts)
            ranked = self.nodes.search(question, self.config.k_max)
            extra = [c for c in node_result_contexts(g, ranked, self.config.n_results * 2, expand_triples=True)
                     if c.text not in have][: self.config.n_results - len(contexts)]
            trace.backfilled = len(extra)
            for c in extra:
                c.metadata["graph_supported"] = False
            contexts += extra
        return contexts[: self.config.n_results]

    # ------------------------------------------------------------ step 4
    def _rerank(self, question: str, contexts: list[Context], trace: Trace) -> list[Context]:
        llm = self.resources.llm
        if not self.config.rerank or llm_free(llm) or not contexts:
            return contexts
        assert llm is not None
        head, tail = contexts[: self.config.k_max], contexts[self.config.k_max :]
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

