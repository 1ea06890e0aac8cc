"""HubLab's scorers inside ``mlflow.genai.evaluate`` give exactly ``hublab eval-file``'s numbers, and bad rows
stay per-row results."""

from __future__ import annotations

import csv
import shutil

import pytest

from hublab.evaluation import conformance as cf
from hublab.evaluation import names
from hublab.mlflow_eval import (
    HEADLINE,
    ThesisGenerationScorer,
    ThesisRetrievalScorer,
    generation_scorers,
    retrieval_scorers,
)

FILES = ["hublink_traverse_gv1.csv", "difar_gv1.csv"]
GOLD = ["(R1:Paper A, venue, R2:ICSA)", "(R1:Paper A, authors, L3:Jane Doe)"]


def _eval_file_means(shared, tmp_path, name: str, *, generation: bool = False) -> dict[str, float]:
    """Per-metric means of the per-row CSV ``hublab eval-file`` writes."""
    from typer.testing import CliRunner

    from hublab.cli import app

    out = tmp_path / "scored.csv"
    res = CliRunner().invoke(app, ["eval-file", str(shared / "reference/predictions" / name), "--output", str(out),
                                   "--generation" if generation else "--no-generation"])
    assert res.exit_code == 0, res.output
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {c: sum(float(r[c]) for r in rows) / len(rows) for c in rows[0] if c != "uid"}


@pytest.mark.parametrize("name", FILES)
def test_scorers_equal_eval_file_on_the_reference_predictions(shared, tmp_path, name):
    want = _eval_file_means(shared, tmp_path, name)
    rows = cf.read_predictions(shared / "reference/predictions" / name, need_generation=False)
    assert len(rows) == 169
    for s in retrieval_scorers():  # run() is how MLflow calls a scorer (its timeout wrapper included)
        vals = [s.run(inputs={"question": r["question"]}, outputs=r["_retrieved"],
                      expectations={"golden_triples": r["_golden"]}) for r in rows]
        assert all(v.error is None for v in vals), s.name
        got = sum(v.value for v in vals) / len(vals)
        ref = (sum(len(r["_retrieved"]) for r in rows) / len(rows) if s.name == names.TRIPLES_PER_QUESTION
               else want[s.name])
        assert abs(got - ref) <= 1e-9, (s.name, got, ref)
    assert {s.name for s in retrieval_scorers()} == set(HEADLINE)


def test_every_thesis_retrieval_name_is_a_scorer():
    """The other 20 per-question names (entity level, F1/F2, EM) are scorers too, from the same code."""
    row = {"outputs": ["(R9:other, x, R8:y)", GOLD[1]], "expectations": {"golden_triples": GOLD}}
    from hublab.evaluation.retrieval import retrieval_metrics

    want = retrieval_metrics(row["outputs"], GOLD)
    for s in retrieval_scorers(tuple(names.retrieval_names())):
        assert s.run(**row).value == want[s.name], s.name


def test_generation_scorers_equal_eval_file(shared, tmp_path):
    """BLEU and ROUGE of the generated answers, as eval-file recomputes them (DiFaR's reference predictions)."""
    name = "difar_gv1.csv"
    want = _eval_file_means(shared, tmp_path, name, generation=True)
    rows = cf.read_predictions(shared / "reference/predictions" / name, need_generation=True)
    metrics = ("bleu_score", "rouge_1_f1", "rouge_2_precision", "rouge_L_recall")
    for s in generation_scorers(metrics):
        vals = [s.run(outputs={"answer": r["generated_answer"], "triples": r["_retrieved"]},
                      expectations={"golden_answer": r["golden_answer"]}) for r in rows]
        assert all(v.error is None for v in vals), s.name
        got = sum(v.value for v in vals) / len(vals)
        assert abs(got - want[s.name]) <= 1e-9, (s.name, got, want[s.name])
        assert want[s.name] > 0
    no_answer = ThesisGenerationScorer("bleu_score").run(inputs={"question": "q"}, outputs=["(R1:a, b, R2:c)"],
                                                        expectations={"golden_answer": "x"})
    assert no_answer.error is not None and "row question 'q': the output has no answer" in no_answer.error.error_message


def test_tuples_and_dicts_score_as_the_triple_strings():
    s = ThesisRetrievalScorer(names.MAP_AT_10)
    exp = {"golden_triples": GOLD}
    as_str = s.run(outputs=["(R9:other, x, R8:y)", *reversed(GOLD)], expectations=exp).value
    tuples = [("R9:other", "x", "R8:y"), ("R1:Paper A", "authors", "L3:Jane Doe"), ("R1:Paper A", "venue", "R2:ICSA")]
    dicts = [{"subject": {"id": "R9", "label": "other"}, "predicate": "x", "object": "R8:y"},
             {"subject": "R1:Paper A", "predicate": "authors", "object": {"id": "L3", "label": "Jane Doe"}},
             {"subject": "R1:Paper A", "predicate": "venue", "object": "R2:ICSA"}]
    assert as_str == pytest.approx(0.583)  # found at ranks 2 and 3: (1/2 + 2/3) / 2, rounded as the thesis does
    assert s.run(outputs=tuples, expectations=exp).value == as_str
    assert s.run(outputs=dicts, expectations=exp).value == as_str
    assert s.run(outputs={"answer": "ICSA", "triples": tuples}, expectations=exp).value == as_str


@pytest.mark.parametrize(("outputs", "expectations", "message"), [
    (["(R1:Paper A, venue, R2:ICSA)", 7], {"golden_triples": GOLD, "uid": "q-7"}, "row uid q-7: output triple 2"),
    ([("R1:a", "b")], {"golden_triples": GOLD}, "output triple 1: expected (subject, predicate, object)"),
    ("(R1:Paper A, venue, R2:ICSA)", {"golden_triples": GOLD}, "expected a list of triples, got str"),
    ([{"subject": "R1:a", "object": "R2:b"}], {"golden_triples": GOLD}, "dict without ['predicate']"),
    (GOLD, {"answer": "x"}, "no golden triples: the row's expectations have no 'golden_triples'"),
])
def test_bad_rows_are_errors_naming_the_row(outputs, expectations, message):
    fb = ThesisRetrievalScorer(names.HITS_AT_10).run(inputs={"question": "Where was Paper A published?"},
                                                     outputs=outputs, expectations=expectations)
    assert fb.value is None and fb.error is not None
    assert message in fb.error.error_message
    assert "row " in fb.error.error_message


def test_a_dataset_of_another_graph_is_an_error_naming_the_row_and_both_graphs():
    """Golden triples are ids of one graph: predictions on gv3_orkg scored against a gv1 row would be a silent 0."""
    from hublab.datasets.model import QAPair
    from hublab.mlflow_eval.data import eval_rows
    from hublab.mlflow_eval.register import records

    pair = QAPair(uid="q-1", question="Where was Paper A published?", golden_answer="ICSA", golden_triples=GOLD)
    (row,) = eval_rows([pair], graph="gv1")
    assert row["expectations"]["graph"] == "gv1" and records([pair], "gv1")[0]["expectations"]["graph"] == "gv1"
    for scorers, outputs in ((retrieval_scorers(graph="gv3_orkg"), GOLD),  # the scorer is told the graph
                             (retrieval_scorers(), {"triples": GOLD, "graph": "gv3_orkg"})):  # the output says it
        for s in scorers:
            fb = s.run(inputs=row["inputs"], outputs=outputs, expectations=row["expectations"])
            assert fb.value is None and fb.error.error_code == "HUBLAB_GRAPH_MISMATCH", s.name
            assert fb.error.error_message.startswith("row uid q-1: the row's golden triples refer to graph 'gv1' "
                                                     "but the predictions were made on graph 'gv3_orkg'")
    # the same graph, or a side that does not name one: scored as usual
    same = ThesisRetrievalScorer(names.RECALL, graph="gv1").run(outputs=GOLD, expectations=row["expectations"])
    assert same.error is None and same.value == 1.0
    unnamed = {k: v for k, v in row["expectations"].items() if k != "graph"}
    assert ThesisRetrievalScorer(names.RECALL, graph="gv3_orkg").run(outputs=GOLD, expectations=unnamed).value == 1.0
    assert ThesisRetrievalScorer(names.RECALL).run(outputs=GOLD, expectations=row["expectations"]).value == 1.0


def test_empty_output_gets_the_thesis_value():
    exp = {"golden_triples": GOLD}
    for metric in HEADLINE:
        fb = ThesisRetrievalScorer(metric).run(outputs=[], expectations=exp)
        assert fb.error is None and fb.value == 0.0, metric
    assert ThesisRetrievalScorer(names.HITS_AT_10).run(outputs=None, expectations=exp).value == 0.0
    # no golden triples at all (an empty list): the reference's convention, 1 for an empty output, else 0
    assert ThesisRetrievalScorer(names.RECALL).run(outputs=[], expectations={"golden_triples": []}).value == 1.0
    assert ThesisRetrievalScorer(names.RECALL).run(outputs=GOLD, expectations={"golden_triples": []}).value == 0.0


def test_unknown_metric_is_refused():
    with pytest.raises(ValueError, match="unknown retrieval metric 'hits@10'"):
        ThesisRetrievalScorer("hits@10")


@pytest.mark.slow  # an MLflow sqlite store, a run and a trace per row: ~10 s on a busy 2-core machine
def test_evaluate_keeps_going_past_bad_rows(tmp_path, shared):
    """A malformed row, an empty output and a row without golden triples inside one ``mlflow.genai.evaluate``:
    the run completes, the mean is over the rows with a value, each bad row carries its own error."""
    import mlflow

    from conftest import migrated_mlflow_store

    shutil.copyfile(migrated_mlflow_store(), tmp_path / "mlflow.db")
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    mlflow.set_experiment("bad-rows")  # not the active experiment an earlier test left (another store's id)
    data = [
        {"inputs": {"question": "good"}, "outputs": GOLD[:1], "expectations": {"golden_triples": GOLD}},
        {"inputs": {"question": "empty"}, "outputs": [], "expectations": {"golden_triples": GOLD}},
        {"inputs": {"question": "malformed"}, "outputs": [42], "expectations": {"golden_triples": GOLD}},
        {"inputs": {"question": "no gold"}, "outputs": GOLD, "expectations": {"answer": "ICSA"}},
        {"inputs": {"question": "other graph"}, "outputs": {"triples": GOLD, "graph": "gv3_orkg"},
         "expectations": {"golden_triples": GOLD, "graph": "gv1"}},
    ]
    res = mlflow.genai.evaluate(data=data, scorers=retrieval_scorers((names.HITS_AT_10,)))
    assert res.metrics[f"{names.HITS_AT_10}/mean"] == pytest.approx(0.25)  # (0.5 + 0) / 2 rows with a value
    traces = mlflow.search_traces(run_id=res.run_id, return_type="list")
    assert len(traces) == 5
    by_q = {}
    for t in traces:
        fb = [a for a in t.info.assessments if a.name == names.HITS_AT_10]
        assert len(fb) == 1
        by_q[t.data.request] = fb[0]
    errors = {q: fb.error.error_message for q, fb in by_q.items() if fb.error}
    assert len(errors) == 3
    assert any("row question 'malformed': output triple 1" in e for e in errors.values())
    assert any("row question 'no gold': no golden triples" in e for e in errors.values())
    assert any("row question 'other graph': the row's golden triples refer to graph 'gv1' but the predictions were "
               "made on graph 'gv3_orkg'" in e for e in errors.values())
