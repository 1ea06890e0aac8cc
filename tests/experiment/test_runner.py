"""Experiment runner end to end on real rows of the GV3 KGQA dataset over the real ORKG export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hublab.pipeline.config import PipelineConfig
from hublab.retrievers.base import Context, RetrievalResult, Retriever
from hublab.retrievers.registry import register


@pytest.fixture()
def project(tmp_path: Path, shared: Path, gv3_orkg_graph, monkeypatch) -> Path:
    from conftest import make_project
    from hublab.config import _load_params
    from hublab.datasets.kgqa_csv import load_kgqa_csv

    pairs = load_kgqa_csv(shared / "data/kgqa/flat_distributed.csv")[:4]
    yield make_project(tmp_path / "proj", shared, gv3_orkg_graph, pairs, monkeypatch)
    _load_params.cache_clear()


def _fixed_cfg(root: Path, contexts: dict[str, list[str]], **extra) -> PipelineConfig:
    path = root / "fixed.json"
    path.write_text(json.dumps(contexts))
    return PipelineConfig.from_dict({"name": "fixed", "retriever": {"type": "fixed", "params": {"path": str(path)}},
                                     "llm": {"backend": "openai", "model": "m", "api_key_env": "SECRET_VAR"},
                                     **extra})


def test_fixed_contexts_give_known_metrics_and_a_complete_mlflow_run(project: Path):
    from mlflow.tracking import MlflowClient

    from hublab.datasets.model import read_jsonl
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment
    from hublab.tracking.mlflow_log import tracking_uri

    pairs = read_jsonl(project / "data/kgqa/gv3_orkg.jsonl")
    g0, g1, g2 = (list(p.golden_triples) for p in pairs[:3])
    assert g0[0] not in g2
    contexts = {pairs[0].question: g0, pairs[1].question: [], pairs[2].question: g2 + [g0[0]]}
    cfg = _fixed_cfg(project, contexts, vector_store={"index": {"type": "HNSW", "M": 16, "efConstruction": 100,
                                                                  "ef": 64}})
    s = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", limit=3, track_carbon=False, progress=False))
    per = {r["uid"]: r["metrics"] for r in s.per_question}
    assert per[pairs[0].uid]["recall_triples"] == 1.0 and per[pairs[0].uid]["precision_triples"] == 1.0
    assert per[pairs[1].uid]["recall_triples"] == 0.0
    assert per[pairs[2].uid]["recall_triples"] == 1.0
    expected_p2 = round(len(set(g2)) / (len(set(g2)) + 1), 2)
    assert per[pairs[2].uid]["precision_triples"] == pytest.approx(expected_p2)
    assert s.metrics["recall_triples"] == pytest.approx(2 / 3)
    run = MlflowClient(tracking_uri(project)).get_run(s.run_id)
    assert run.data.params["retriever.type"] == "fixed" and run.data.params["graph"] == "gv3_orkg"
    assert run.data.params["llm.api_key_env"] == "SECRET_VAR"
    assert {k: v for k, v in run.data.params.items() if k.startswith("vector_store.index.")} == {
        "vector_store.index.type": "HNSW", "vector_store.index.M": "16", "vector_store.index.efConstruction": "100",
        "vector_store.index.ef": "64"}  # the server's index parameters are part of the run's record
    assert not any("sk-" in v for v in run.data.params.values())
    assert run.data.metrics["recall_triples"] == pytest.approx(2 / 3)
    assert "hit_at_10_triples" in run.data.metrics
    # the run page: at most 20 headline metrics, each under exactly its own name; every metric in metrics.json
    from hublab.tracking.run_page import MAX_METRICS, headline

    assert set(run.data.metrics) == set(headline(s.metrics)) and len(run.data.metrics) <= MAX_METRICS
    assert "map_at_10_triples" in run.data.metrics and "llm_tokens" not in run.data.metrics  # no LLM called
    client = MlflowClient(tracking_uri(project))
    arts = {a.path for a in client.list_artifacts(s.run_id)}
    assert {"predictions.csv", "pipeline.yaml", "metrics.json", "metrics_by_slice.json"} <= arts
    assert any(a.endswith(".png") for a in arts)
    ours = {k for k, v in s.metrics.items() if isinstance(v, int | float) and v == v and abs(v) != float("inf")}
    logged = json.loads(Path(client.download_artifacts(s.run_id, "metrics.json", str(project / "dl"))).read_text())
    assert ours <= set(logged), sorted(ours - set(logged))
    table = json.loads(Path(client.download_artifacts(s.run_id, "metrics_by_slice.json", str(project / "dl")))
                       .read_text())
    assert table["columns"][:2] == ["field", "value"] and "recall_triples" in table["columns"] and table["data"]
    assert {"path": "metrics_by_slice.json", "type": "table"} in json.loads(run.data.tags["mlflow.loggedArtifacts"])
    # the same command again (all answered: it finishes the same run again) replaces the table, never appends to it
    again = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", limit=3, track_carbon=False, progress=False))
    assert again.run_id == s.run_id
    table2 = json.loads(Path(client.download_artifacts(s.run_id, "metrics_by_slice.json", str(project / "dl2")))
                        .read_text())
    assert table2 == table


def test_a_run_without_charts_or_dataset_input_logs_the_rest(project: Path):
    """A comparison's report runs draw no per-slice charts (the comparison charts them all) and a study's trials log
    no dataset input (their params and tags name it): both cost time in every one of hundreds of runs. What is left
    is the same record: predictions, metrics and the slice table."""
    from mlflow.tracking import MlflowClient

    from hublab.datasets.model import read_jsonl
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment
    from hublab.tracking.mlflow_log import tracking_uri

    pairs = read_jsonl(project / "data/kgqa/gv3_orkg.jsonl")
    cfg = _fixed_cfg(project, {pairs[0].question: list(pairs[0].golden_triples)})
    client = MlflowClient(tracking_uri(project))
    full = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", limit=2, track_carbon=False, progress=False))
    bare = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", limit=3, track_carbon=False, progress=False,
                                           artifact_plots=False, log_dataset_input=False))
    arts = {run: {a.path for a in client.list_artifacts(run)} for run in (full.run_id, bare.run_id)}
    assert any(a.endswith(".png") for a in arts[full.run_id])
    assert not any(a.endswith(".png") for a in arts[bare.run_id])
    assert {"predictions.csv", "metrics.json", "metrics_by_slice.json"} <= arts[bare.run_id]
    assert len(client.get_run(full.run_id).inputs.dataset_inputs) == 1
    assert client.get_run(bare.run_id).inputs.dataset_inputs == []
    assert client.get_run(bare.run_id).data.params["dataset"] == "gv3_orkg"


def test_a_study_trial_takes_an_answer_this_process_gave_in_another_file_and_a_plain_run_never(project: Path):
    """A comparison's folds put most questions to the same configuration again, each fold from its own file: a
    trial run takes such an answer as it was given (the same record, its runtime included) under its own key, and
    tags the run with how many; a run that does not share answers every question itself."""
    from mlflow.tracking import MlflowClient

    from hublab.datasets.model import read_jsonl, write_jsonl
    from hublab.experiment import shared_answers
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment
    from hublab.pipeline.config import PipelineConfig
    from hublab.tracking.mlflow_log import tracking_uri

    pairs = read_jsonl(project / "data/kgqa/gv3_orkg.jsonl")
    write_jsonl(pairs[:3], project / "first.jsonl")
    write_jsonl(pairs[1:4], project / "second.jsonl")  # two questions in common, at other positions
    write_jsonl(pairs[1:4], project / "third.jsonl")  # the second's questions, a run of its own (not resumed)
    cfg = PipelineConfig.from_dict({"name": "bm25", "retriever": {"type": "bm25", "params": {"n_results": 10}},
                                    "llm": {"backend": "none"}})
    shared_answers.forget()

    def run(dataset: str, share: bool):
        return run_experiment(RunRequest.build(cfg, "gv3_orkg", str(project / dataset), track_carbon=False,
                                               progress=False, trace=False, share_answers=share))

    first, second, plain = run("first.jsonl", True), run("second.jsonl", True), run("third.jsonl", False)
    by_uid = {name: {r["uid"]: r for r in s.per_question} for name, s in
              (("first", first), ("second", second), ("plain", plain))}
    for p in pairs[1:3]:
        given, taken = by_uid["first"][p.uid], by_uid["second"][p.uid]
        assert {**given, "key": None} == {**taken, "key": None}  # the same answer, its runtime too
        assert taken["key"] == f"{pairs[1:4].index(p)}:{p.uid}"  # under this run's position
        assert by_uid["plain"][p.uid]["runtime"] != given["runtime"]  # answered again
        assert by_uid["plain"][p.uid]["retrieved_context"] == given["retrieved_context"]
    client = MlflowClient(tracking_uri(project))
    assert client.get_run(second.run_id).data.tags["hublab.answers_shared"] == "2"
    assert "hublab.answers_shared" not in client.get_run(plain.run_id).data.tags
    assert second.metrics["map_at_10_triples"] == plain.metrics["map_at_10_triples"]


class Crash(BaseException):
    """Simulates a kill (not an Exception, so the runner does not record it as a per-question error)."""


CALLS: list[str] = []


@register("crashy")
class CrashyRetriever(Retriever):
    crash_on: int | None = 2

    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        CALLS.append(question)
        if CrashyRetriever.crash_on is not None and len(CALLS) == CrashyRetriever.crash_on + 1:
            CrashyRetriever.crash_on = None
            raise Crash()
        node = self.resources.graph.outgoing(topic_entity_id or "R659055")
        return RetrievalResult([Context(t.render(), t) for t in node[:5]])


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_killed_run_resumes_without_recomputing(project: Path):
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    cfg = PipelineConfig.from_dict({"name": "crashy", "retriever": {"type": "crashy"}})
    CALLS.clear()
    CrashyRetriever.crash_on = 2
    with pytest.raises(Crash):
        run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", track_carbon=False, progress=False))
    assert len(CALLS) == 3
    s = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", track_carbon=False, progress=False))
    assert len(CALLS) == 3 + 2  # only the crashed and the never-started question ran
    CALLS.clear()
    fresh = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", track_carbon=False, progress=False,
                                            resume=False, experiment="fresh"))
    assert len(CALLS) == 4
    assert fresh.metrics["recall_triples"] == pytest.approx(s.metrics["recall_triples"])
    assert s.n_questions == 4


def test_wrong_graph_for_dataset_is_refused(project: Path):
    from hublab.errors import InputError
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    cfg = PipelineConfig.from_dict({"name": "c", "retriever": {"type": "crashy"}})
    with pytest.raises(InputError, match="golden triple ids"):
        run_experiment(RunRequest.build(cfg, "gv1", "gv3_orkg", track_carbon=False, progress=False))


def test_pipeline_config_errors(tmp_path: Path):
    from hublab.errors import InputError
    from hublab.pipeline.config import load_pipeline

    p = tmp_path / "p.yaml"
    p.write_text("name: x\nretriever: {type: hublink}\nllm: {backend: openai, api_key: sk-123}\n")
    with pytest.raises(InputError, match="secrets"):
        load_pipeline(p)
    p.write_text("name: x\nretriever: {type: hublink}\nretreiver_params: {}\n")
    with pytest.raises(InputError, match="unknown keys"):
        load_pipeline(p)
    p.write_text("name: x\nretriever: {type: hublink}\ngeneration: {enabled: true, model: x}\n")
    with pytest.raises(InputError, match="generation"):
        load_pipeline(p)


def test_a_renamed_copy_reuses_the_answers_in_a_run_of_its_own(project: Path):
    """A pipeline copied under a new ``name`` asks no question again (the answers are keyed by what determines them)
    but is recorded in an MLflow run of its own, under its own name; it reused the original's run under the
    original's name before (issue #45). The original's rerun finds its own run again; another experiment is another
    run too (and another checkpoint: the experiment is part of the run identity)."""
    from mlflow.tracking import MlflowClient

    from hublab.datasets.model import read_jsonl
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment
    from hublab.tracking.mlflow_log import tracking_uri

    pairs = read_jsonl(project / "data/kgqa/gv3_orkg.jsonl")
    contexts = {p.question: list(p.golden_triples)[:1] for p in pairs[:3]}
    original = _fixed_cfg(project, contexts)
    copy = PipelineConfig.from_dict({**original.to_dict(), "name": "fixed_copy"})
    assert copy.config_hash("gv3_orkg", "gv3_orkg") == original.config_hash("gv3_orkg", "gv3_orkg")
    kw = {"limit": 3, "track_carbon": False, "progress": False}
    first = run_experiment(RunRequest.build(original, "gv3_orkg", "gv3_orkg", **kw))
    (checkpoint,) = (project / "outputs" / "runs").glob("*/predictions.jsonl")
    answered = checkpoint.read_text()
    renamed = run_experiment(RunRequest.build(copy, "gv3_orkg", "gv3_orkg", **kw))
    elsewhere = run_experiment(RunRequest.build(original, "gv3_orkg", "gv3_orkg", experiment="another", **kw))
    again = run_experiment(RunRequest.build(original, "gv3_orkg", "gv3_orkg", **kw))

    assert checkpoint.read_text() == answered  # no question asked again
    assert len({first.run_id, renamed.run_id, elsewhere.run_id}) == 3 and again.run_id == first.run_id
    client = MlflowClient(tracking_uri(project))
    assert client.get_run(renamed.run_id).info.run_name.startswith("fixed_copy·")
    assert client.get_run(first.run_id).info.run_name.startswith("fixed·")
    assert client.get_experiment(client.get_run(elsewhere.run_id).info.experiment_id).name == "another"
    quality = [k for k in first.metrics if k.endswith("_triples")]  # timings differ run to run
    assert len(quality) > 5
    assert [renamed.metrics[k] for k in quality] == [first.metrics[k] for k in quality] == [
        elsewhere.metrics[k] for k in quality]


def test_questions_run_on_a_settled_heap_that_is_released_after_the_run(project: Path):
    """Issue #43: the command starts with few collections (``quick_start_gc``); once the pipeline is ready what
    exists is frozen out of the collector's scans and the threshold is back; after the run it is collectable again
    (a tuning process runs many)."""
    import gc

    from hublab.datasets.model import read_jsonl
    from hublab.env import START_GC_THRESHOLD, quick_start_gc
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    pairs = read_jsonl(project / "data/kgqa/gv3_orkg.jsonl")
    cfg = _fixed_cfg(project, {p.question: list(p.golden_triples) for p in pairs[:2]})
    default = gc.get_threshold()
    seen = []
    quick_start_gc()
    assert gc.get_threshold()[0] == START_GC_THRESHOLD
    run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", limit=2, track_carbon=False, progress=False),
                   on_question=lambda *_: seen.append((gc.get_freeze_count(), gc.get_threshold())) and False)
    assert len(seen) == 2 and all(frozen > 0 and threshold == default for frozen, threshold in seen)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == default


def test_a_resumed_run_shows_its_questions_as_a_fresh_run_does(project: Path):
    """Issue #42: a pruned tuning trial run again (the same configuration in a later study, or after a crash)
    resumes its checkpoint. Its pruner must see the questions a fresh run shows it, in the same order with the same
    counts and partial metrics; it saw only the new ones, in another order, so a forced rerun of tune_all pruned
    other trials and chose other parameters than a fresh clone's."""
    from hublab.datasets.model import read_jsonl
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    pairs = read_jsonl(project / "data/kgqa/gv3_orkg.jsonl")
    cfg = _fixed_cfg(project, {p.question: list(p.golden_triples)[:i] for i, p in enumerate(pairs[:4])})

    def watch(stop_at: int | None = None):
        seen: list[tuple] = []

        def on_question(done, total, partial, answer):
            seen.append((done, total, answer["key"], round(partial()["recall_triples"], 6), answer["runtime"]))
            return done == stop_at

        return seen, on_question

    def run(on_question, resume: bool):
        return run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", limit=4, track_carbon=False, progress=False,
                                               order_seed=3, resume=resume), on_question=on_question)

    fresh, cb = watch()
    run(cb, resume=False)
    pruned, cb = watch(stop_at=2)
    assert run(cb, resume=False).stopped
    again, cb = watch(stop_at=2)  # run again: stopped where it was, nothing answered anew
    assert run(cb, resume=True).stopped and again == pruned
    resumed, cb = watch()
    assert not run(cb, resume=True).stopped
    assert [r[:4] for r in resumed] == [r[:4] for r in fresh]  # order, counts and partial metrics of a fresh run
    assert resumed[:2] == pruned  # the two finished questions come from the checkpoint (their own runtimes)
    from hublab.experiment.question import record_position

    assert [record_position(r[2]) for r in fresh] == [3, 0, 2, 1]  # random.Random(3)'s order, not the dataset's
