"""Every LLM pipeline in ``pipelines/`` (each file with a ``backend: openai`` LLM) runs end to end through the
real CLI against a real OpenAI-compatible server process — the bundled llama.cpp server on 127.0.0.1 — with
only the endpoint overridden (``--llm-base-url``/``--llm-model``). The 270M base model's answers are not
judged; the wiring is: LLM calls were made over HTTP and answered with token counts, no unhandled error, valid
outputs. The test bounds every call's generation (``WIRING_MAX_TOKENS``, sent as ``max_tokens``) and sets its own
failure gate: a base model cut at a few tokens gives answers the pipeline may not parse (a malformed answer after
its retries is an LLM error and a fall-back: a degraded question, not a broken wire). Only the test's copy is
bounded: the shipped pipelines keep the thesis's defaults (``test_only_the_copy_is_bounded``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from conftest import ROOT, make_project
from hublab.cli import app


def _llm_pipelines() -> list[str]:
    out = []
    for f in sorted((ROOT / "pipelines").glob("*.yaml")):
        cfg = yaml.safe_load(f.read_text())
        sections = [cfg.get("llm") or {}] + [(cfg.get(p) or {}).get("llm") or {} for p in
                                             ("pre_retrieval", "post_retrieval", "generation")]
        if any(s.get("backend") == "openai" for s in sections):
            out.append(f.stem)
    return out


PIPELINES = _llm_pipelines()


@pytest.fixture(scope="module")
def small_project(tmp_path_factory, shared, gv3_orkg_graph):
    """The GV3 export cut to 1 paper (every triple on its hub paths) and one KGQA question about it (CI-sized: each
    pipeline makes real, slow calls to a 270M model on 2 cores)."""
    from hublab.datasets.kgqa_csv import load_kgqa_csv
    from hublab.graph.rdf import RdfKnowledgeGraph
    from hublab.retrievers.methods.hublink.hubs import HubDetector, all_hub_roots, hub_paths

    g = gv3_orkg_graph
    det = HubDetector(g, ["Paper"])
    papers = all_hub_roots(g, det, ["R659055"])
    pairs = load_kgqa_csv(shared / "data/kgqa/flat_distributed.csv")
    chosen, keep = [], []
    for p in pairs:  # questions whose golden triples all hang off one paper
        ids = {t.split(":", 1)[0].strip("(") for t in p.golden_triples}
        owner = [r for r in papers if r in ids]
        if len(owner) == 1 and owner[0] not in keep and p.topic_entity_id:
            keep.append(owner[0])
            chosen.append(p)
        if len(chosen) == 1:
            break
    # the question's paper alone: a second paper doubled HubLink's PATHTOTEXT calls at indexing (41 instead of 20)
    triples = {t.render(): t for r in keep for hp in hub_paths(g, det, r) for t in hp.triples}
    small = RdfKnowledgeGraph.from_triples(list(triples.values()), name="gv3_orkg")
    root = tmp_path_factory.mktemp("http_project")
    mp = pytest.MonkeyPatch()
    make_project(root, shared, small, chosen, mp)
    yield root
    mp.undo()


def test_only_the_copy_is_bounded(tmp_path):
    """The wiring test's bound and gate are in its copy; the shipped HubLink pipeline keeps the thesis's 4,096."""
    shipped = ROOT / "pipelines" / "hublink.yaml"
    before = shipped.read_text()
    copy = yaml.safe_load(_with_long_llm_timeout(shipped, tmp_path).read_text())
    assert copy["llm"]["max_tokens"] == WIRING_MAX_TOKENS and copy["evaluation"]["max_failure_share"] == 1.0
    assert shipped.read_text() == before and yaml.safe_load(before)["llm"]["max_tokens"] == 4096


def test_every_llm_pipeline_is_covered():
    assert {"hublink", "difar", "fidelis", "mindmap", "tog", "structgpt", "four_step_focus"} <= set(PIPELINES)


def assert_metrics_match_the_record(m: dict, project: Path) -> None:
    """The run's one question: its Recall and Hits@10 recomputed by hand from the checkpointed retrieved and golden
    triples (exact strings; case-insensitive containment in the top 10), its MAP@10 by the metric code on them."""
    from hublab.evaluation.retrieval import retrieval_metrics

    newest = max((project / "outputs" / "runs").glob("*/predictions.jsonl"), key=lambda f: f.stat().st_mtime)
    (rec,) = [json.loads(line) for line in newest.read_text().splitlines() if line.strip()]
    got, gold = rec["retrieved_context"], list(dict.fromkeys(rec["golden_triples"]))
    assert gold, rec
    assert m["recall_triples"] == pytest.approx(round(len(set(got) & set(gold)) / len(gold), 2))
    top = [t.lower() for t in got[:10]]
    assert m["hit_at_10_triples"] == pytest.approx(round(sum(any(g.lower() in t for t in top) for g in gold)
                                                         / len(gold), 3))
    assert m["map_at_10_triples"] == pytest.approx(retrieval_metrics(got, rec["golden_triples"])["map_at_10_triples"])


@pytest.mark.slow
@pytest.mark.parametrize("name", PIPELINES)
def test_pipeline_runs_over_http(name, small_project: Path, llama_server, monkeypatch):
    monkeypatch.setenv("HUBLAB_ROOT", str(small_project))
    monkeypatch.chdir(small_project)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local endpoint needs no key, and none is sent
    for var in ("HUBLAB_LLM_BASE_URL", "HUBLAB_LLM_MODEL"):  # the CLI sets them in-process: restore after
        monkeypatch.delenv(var, raising=False)
    pipeline = _with_long_llm_timeout(ROOT / "pipelines" / f"{name}.yaml", small_project)
    res = CliRunner().invoke(app, ["run", str(pipeline), "--graph", "gv3_orkg",
                                   "--dataset", "gv3_orkg", "--no-carbon", "--experiment", f"http-{name}",
                                   "--llm-base-url", llama_server, "--llm-model", "gemma3-270m", "--json"])
    assert res.exit_code == 0, (res.output[-3000:], res.exception)
    # the --json document; log lines (stderr, mixed in by CliRunner) may precede or follow it
    out, _ = json.JSONDecoder().raw_decode(res.output[res.output.index("{"):])
    m = out["metrics"]
    assert out["n_questions"] == 1
    assert m["llm_tokens"] > 0, f"{name}: no LLM tokens counted — were calls made over HTTP?"
    assert m["n_errors"] == 0, f"{name}: unhandled errors"
    assert_metrics_match_the_record(m, small_project)
    preds = small_project / "outputs"
    assert preds.exists()


#: Per-request timeout for the bundled 270M model on a CPU: a verbatim thesis prompt with its context can take
#: a minute on a busy 2-core machine; this test checks the wiring, not the model's speed (the pipelines' own 60 s
#: default is for real servers).
LLM_TIMEOUT_S = 300.0
#: Every call's generation limit in this wiring test: the 270M base model otherwise decodes to each call's limit
#: (up to 4,096 tokens, minutes per call on 2 cores: 340-360 s for HubLink alone), which tests the model's
#: stamina, not the wiring.
WIRING_MAX_TOKENS = 24
#: CI-sized searches where a method's LLM calls grow with its search (FiDeLiS prunes its beam with one LLM call per
#: step: the thesis's 7 steps of 30 candidates took 5 minutes here); every LLM step is still called over HTTP.
WIRING_RETRIEVER_PARAMS = {"fidelis": {"max_length": 2}}


def _with_long_llm_timeout(pipeline: Path, project: Path) -> Path:
    """A copy of ``pipeline`` in ``project`` whose OpenAI-compatible LLM blocks wait ``LLM_TIMEOUT_S`` per request
    and generate at most ``WIRING_MAX_TOKENS`` tokens, with the test's own failure gate (every question may be
    degraded by a cut answer; tokens counted and no unhandled error are asserted instead)."""

    def patch(node):
        if isinstance(node, dict):
            if node.get("backend") == "openai":
                node["timeout_s"] = LLM_TIMEOUT_S
                node["max_tokens"] = WIRING_MAX_TOKENS
            for v in node.values():
                patch(v)
        elif isinstance(node, list):
            for v in node:
                patch(v)

    cfg = yaml.safe_load(pipeline.read_text())
    patch(cfg)
    cfg.setdefault("evaluation", {})["max_failure_share"] = 1.0
    cfg["retriever"].setdefault("params", {}).update(WIRING_RETRIEVER_PARAMS.get(cfg["retriever"]["type"], {}))
    out = project / "pipelines" / pipeline.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return out
