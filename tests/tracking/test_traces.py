"""MLflow tracking of a real ``hublab run`` the way MLflow users look at it: one trace per question on the run
(Traces tab) with question-analysis and RETRIEVER spans carrying the retrieved triples, the KGQA dataset as a run
input whose digest follows the file, the ``graph``/``dataset``/``retriever``/``llm``/``embedder`` tags, and — for a
run with an LLM (the real llama.cpp server) — LLM spans with token counts and the prompt versions the run used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT, make_project
from hublab.cli import app


def _small_graph_and_questions(shared: Path, graph, n_questions: int):
    """The GV3 export cut to the papers of ``n_questions`` KGQA questions (each answered by one paper, with a
    topic entity) plus one other paper: every triple on those papers' hub paths."""
    from hublab.datasets.kgqa_csv import load_kgqa_csv
    from hublab.graph.rdf import RdfKnowledgeGraph
    from hublab.retrievers.methods.hublink.hubs import HubDetector, all_hub_roots, hub_paths

    det = HubDetector(graph, ["Paper"])
    papers = all_hub_roots(graph, det, ["R659055"])
    chosen, keep = [], []
    for p in load_kgqa_csv(shared / "data/kgqa/flat_distributed.csv"):
        ids = {t.split(":", 1)[0].strip("(") for t in p.golden_triples}
        owner = [r for r in papers if r in ids]
        if len(owner) == 1 and owner[0] not in keep and p.topic_entity_id:
            keep.append(owner[0])
            chosen.append(p)
        if len(chosen) == n_questions:
            break
    keep += [r for r in papers if r not in keep][:1]
    triples = {t.render(): t for r in keep for hp in hub_paths(graph, det, r) for t in hp.triples}
    return RdfKnowledgeGraph.from_triples(list(triples.values()), name="gv3_orkg"), chosen


@pytest.fixture(scope="module")
def project(tmp_path_factory, shared, gv3_orkg_graph):
    small, pairs = _small_graph_and_questions(shared, gv3_orkg_graph, 3)
    root = tmp_path_factory.mktemp("traces_project")
    mp = pytest.MonkeyPatch()
    make_project(root, shared, small, pairs, mp)
    yield root
    mp.undo()


def _run(project: Path, monkeypatch, *args: str) -> dict:
    monkeypatch.setenv("HUBLAB_ROOT", str(project))
    monkeypatch.chdir(project)
    res = CliRunner().invoke(app, ["run", *args, "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--no-carbon",
                                   "--json"])
    assert res.exit_code == 0, (res.output[-3000:], res.exception)
    return json.JSONDecoder().raw_decode(res.output[res.output.index("{"):])[0]  # log lines may follow


def _traces(project: Path, run_id: str):
    import mlflow
    from mlflow import MlflowClient

    from hublab.tracking.mlflow_log import tracking_uri

    mlflow.set_tracking_uri(tracking_uri(project))
    run = MlflowClient().get_run(run_id)
    return run, mlflow.search_traces(run_id=run_id, locations=[run.info.experiment_id], return_type="list")


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_llm_free_run_has_a_trace_per_question_a_dataset_input_and_tags(project: Path, monkeypatch):
    from hublab.datasets.model import read_jsonl
    from hublab.tracking.run_inputs import file_digest

    out = _run(project, monkeypatch, str(ROOT / "pipelines" / "hublink_local.yaml"), "--experiment", "traces")
    assert out["n_questions"] == 3
    run, traces = _traces(project, out["run_id"])
    pairs = read_jsonl(project / "data/kgqa/gv3_orkg.jsonl")

    # one trace per question, attached to the run
    assert len(traces) == 3
    assert all(t.info.trace_metadata.get("mlflow.sourceRun") == run.info.run_id for t in traces)
    roots = {}
    for t in traces:
        root = next(s for s in t.data.spans if s.parent_id is None)
        roots[root.inputs["question"]] = (t, root)
    assert set(roots) == {p.question for p in pairs}
    for p in pairs:
        t, root = roots[p.question]
        spans = t.data.spans
        kinds = {s.name: s.span_type for s in spans}
        assert kinds["question analysis (hublink)"] == "PARSER"
        analysis = next(s for s in spans if s.name == "question analysis (hublink)")
        assert analysis.attributes["components_from"] == "rules"
        retrieve = next(s for s in spans if s.name == "retrieve (hublink)")
        assert retrieve.span_type == "RETRIEVER" and retrieve.parent_id == root.span_id
        # the RETRIEVER span's documents are the triples the question got, in rank order
        docs = retrieve.outputs
        assert [d["page_content"] for d in docs] == root.outputs["retrieved_context"]
        assert docs and docs[0]["metadata"]["rank"] == 1
        assert retrieve.attributes["n_contexts"] == len(docs)
        # the traversal strategy's hub search, one RETRIEVER span per level walked, with the hubs' paths
        levels = [s for s in spans if s.name == "hub search (traversal level)"]
        assert levels and all(s.span_type == "RETRIEVER" for s in levels)
        assert any(d["metadata"]["hub_root"] for s in levels for d in (s.outputs or []))
        assert not [s for s in spans if s.span_type in ("LLM", "CHAT_MODEL")]  # LLM-free: no LLM spans
        assert root.attributes["uid"] == p.uid
        assert "metric.recall_triples" in root.attributes

    # the run opens after its first question (issue #43): that question's trace was kept as data and written into
    # the run with its own times, which precede the run's start; every trace's spans lie within their root's times
    first_root = roots[pairs[0].question][1]
    assert first_root.start_time_ns < run.info.start_time * 1_000_000
    assert out["metrics"]["tracking_open_s"] > 0
    for t, root in roots.values():
        assert all(root.start_time_ns <= s.start_time_ns <= s.end_time_ns <= root.end_time_ns for s in t.data.spans)

    # tags from the resolved pipeline config, no prompt versions (no LLM)
    tags = run.data.tags
    assert {k: tags[k] for k in ("graph", "dataset", "retriever", "llm", "embedder")} == {
        "graph": "gv3_orkg", "dataset": "gv3_orkg", "retriever": "hublink", "llm": "none",
        "embedder": "all-MiniLM-L6-v2"}
    assert not [k for k in tags if k.startswith("prompt.")] and "mlflow.linkedPrompts" not in tags

    # the dataset as a run input with the file's digest; an edited file gives another digest
    data_file = project / "data/kgqa/gv3_orkg.jsonl"
    (ds_input,) = run.inputs.dataset_inputs
    assert ds_input.dataset.name == "gv3_orkg" and ds_input.dataset.digest == file_digest(data_file)
    assert {t.key: t.value for t in ds_input.tags}["mlflow.data.context"] == "eval"
    assert json.loads(ds_input.dataset.profile)["num_rows"] == 3
    lines = data_file.read_text().splitlines()
    row = json.loads(lines[0])
    row["golden_answer"] += " (edited)"
    data_file.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    out2 = _run(project, monkeypatch, str(ROOT / "pipelines" / "bm25.yaml"), "--experiment", "traces",
                "--limit", "1", "--no-trace")
    run2, traces2 = _traces(project, out2["run_id"])
    (ds2,) = run2.inputs.dataset_inputs
    assert ds2.dataset.digest == file_digest(data_file) != ds_input.dataset.digest
    assert {t.key: t.value for t in ds2.tags}["hublab.scope"] == "1 of 3 questions"
    assert traces2 == []  # --no-trace
    assert run2.data.tags["retriever"] == "bm25"


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_prompt_versions_are_registered_only_when_the_text_changes(tmp_path: Path):
    import mlflow

    from hublab.tracking.prompt_registry import register, to_mlflow_template

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    v1 = register("t_prompt", "Question: {question}\nJSON like {{\"ids\": [1]}}", "test")
    assert v1.template == 'Question: {{question}}\nJSON like {"ids": [1]}'
    assert v1.format(question="Q?") == "Question: {question}\nJSON like {{\"ids\": [1]}}".format(question="Q?")
    assert register("t_prompt", "Question: {question}\nJSON like {{\"ids\": [1]}}", "test").version == v1.version
    v2 = register("t_prompt", "Question: {question}!", "test")
    assert int(v2.version) == int(v1.version) + 1
    assert to_mlflow_template("{a} and {b}") == "{{a}} and {{b}}"


@pytest.mark.slow
def test_hublink_run_with_an_llm_traces_llm_calls_and_links_prompt_versions(project: Path, llama_server,
                                                                              monkeypatch):
    """One question of HubLink against the real llama.cpp server (1 hub, template path texts: 4 calls)."""
    import yaml
    from mlflow import MlflowClient

    from hublab.retrievers.methods.hublink import prompts
    from hublab.tracking.prompt_registry import to_mlflow_template

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = yaml.safe_load((ROOT / "pipelines" / "hublink.yaml").read_text())
    cfg["name"] = "hublink_traced"
    cfg["retriever"]["params"].update({"number_of_hubs": 1, "llm_path_text": False, "max_workers": 2})
    cfg["llm"].update({"cache": False, "max_tokens": 96})
    pipeline = project / "hublink_traced.yaml"
    pipeline.write_text(yaml.safe_dump(cfg))
    out = _run(project, monkeypatch, str(pipeline), "--experiment", "traces-llm", "--limit", "1",
               "--llm-base-url", llama_server, "--llm-model", "gemma3-270m")
    run, traces = _traces(project, out["run_id"])
    assert len(traces) == 1
    spans = traces[0].data.spans
    llm_spans = [s for s in spans if s.span_type == "CHAT_MODEL"]
    assert len(llm_spans) >= 3  # components, partial answer, final answer, triple filter (if any triple is left)
    for s in llm_spans:
        usage = s.attributes["mlflow.chat.tokenUsage"]
        assert usage["input_tokens"] == s.attributes["prompt_tokens"] > 0
        assert s.attributes["latency_s"] > 0 and s.attributes["model"] == "gemma3-270m"
        assert s.inputs["messages"][-1]["role"] == "user"
    assert traces[0].info.token_usage["input_tokens"] == sum(s.attributes["prompt_tokens"] for s in llm_spans)
    assert traces[0].info.token_usage["total_tokens"] == out["metrics"]["llm_tokens"]
    root = next(s for s in spans if s.parent_id is None)
    assert all(s.span_id != root.span_id for s in llm_spans)
    analysis = next(s for s in spans if s.name == "question analysis (hublink)")
    assert any(s.parent_id == analysis.span_id for s in llm_spans)  # the component-extraction call

    tags = run.data.tags
    assert tags["llm"] == "gemma3-270m (openai)" and "127.0.0.1" not in tags["llm"]
    used = {"hublink_components", "hublink_partial", "hublink_final", "hublink_filter"}
    assert {k.removeprefix("prompt.") for k in tags if k.startswith("prompt.")} == used
    linked = {(p["name"], p["version"]) for p in json.loads(tags["mlflow.linkedPrompts"])}
    client = MlflowClient()
    for name in used:
        pname, version = tags[f"prompt.{name}"].split("/")
        assert (pname, version) in linked
        text = client.get_prompt_version(pname, version).template
        attr = {"hublink_components": "COMPONENTS", "hublink_partial": "PARTIAL", "hublink_final": "FINAL",
                "hublink_filter": "FILTER"}[name]
        assert text == to_mlflow_template(getattr(prompts, attr))


def test_retrievers_llm_and_pipeline_never_import_mlflow_or_tracking():
    """Data flows config → data → index → retrieval → evaluation → tracking: the traced code only knows the
    neutral hook (``hublab.observability``); the MLflow tracer is installed from above by the runner."""
    import ast

    src = ROOT / "src" / "hublab"
    offenders = []
    files = [src / "observability.py"]
    for package in ("retrievers", "llm", "pipeline", "embedding", "graph"):
        files += sorted((src / package).rglob("*.py"))
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{f.relative_to(src)}: {n}" for n in names
                          if n.split(".")[0] == "mlflow" or n.startswith("hublab.tracking")]
    assert offenders == []


def test_no_tracer_means_one_shared_no_op_span():
    from hublab import observability

    assert not observability.enabled()
    a = observability.span("x", observability.RETRIEVER, inputs={"q": 1})
    assert a is observability.span("y") and not a.__enter__().recording


def test_span_buffer_keeps_a_question_as_a_tree_with_its_times_and_worker_threads_under_the_owner():
    """What ``hublab run`` keeps of its first question before MLflow is open (issue #43): the same nesting the
    MLflow tracer gives (a worker thread's span under the innermost span of the question's thread), outputs,
    token usage, an exception, and wall-clock times that contain their children's."""
    import threading

    from hublab import observability

    buf = observability.SpanBuffer()
    with observability.installed(buf):
        with observability.span("question", inputs={"question": "q"}) as root:
            with observability.span("retrieve", observability.RETRIEVER) as sp:
                worker = threading.Thread(target=lambda: observability.span("partial", observability.LLM)
                                          .__enter__().set_token_usage(7, 3))
                worker.start()
                worker.join()
                sp.set_outputs(["t1", "t2"])
            with pytest.raises(ValueError), observability.span("parse", observability.PARSER):
                raise ValueError("bad json")
            root.set_attributes({"uid": "u1"})
    (tree,) = buf.take()
    assert buf.take() == [] and not observability.enabled()
    assert [c.name for c in tree.children] == ["retrieve", "parse"]
    retrieve, parse = tree.children
    assert [c.name for c in retrieve.children] == ["partial"] and retrieve.children[0].token_usage == (7, 3)
    assert retrieve.outputs == ["t1", "t2"] and isinstance(parse.error, ValueError)
    assert tree.inputs == {"question": "q"} and tree.attributes == {"uid": "u1"}
    assert tree.start_ns <= retrieve.start_ns <= retrieve.end_ns <= parse.start_ns <= parse.end_ns <= tree.end_ns
