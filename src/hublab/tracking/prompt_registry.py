"""The pipeline's prompt templates in the MLflow Prompt Registry, and which versions a run used.

Every template a run can send to its LLM is registered under a stable name (``hublink_partial``,
``mindmap_extract``, ``pipeline_generate`` …). A new version is registered only when the text changed (compared with
the latest version's template); the run is linked to the versions it used with MLflow's own run↔prompt link
(``MlflowClient.link_prompt_version_to_run``: the ``mlflow.linkedPrompts`` tag, shown on the run page) and gets one
readable tag per prompt, ``prompt.<name> = <name>/<version>``. Runs without an LLM register nothing.

Each version says where its text comes from (tag ``origin``): ``thesis Listing A.n`` for the seven prompts the
thesis prints (its appendix A.1, sent verbatim: tests/tracking/test_thesis_listings.py compares them with the
thesis text), ``hublab`` for the project's own (PATHTOTEXT and every baseline's prompts, which the thesis does not
print).

Templates are Python ``str.format`` strings in the code; the registry holds them in MLflow's ``{{variable}}`` form
(``to_mlflow_template``), so ``mlflow.genai.load_prompt(...).format(question=...)`` renders exactly the text the
code sends.
"""

from __future__ import annotations

import hashlib
import importlib
import pkgutil
import string
from typing import Any

from hublab.pipeline.config import PipelineConfig

#: the optional pipes' prompts (pipeline/prompts.py, thesis Listings A.5–A.7), by the pipe that sends them
PIPE_PROMPTS = {"pre_retrieval": ("pipeline_augment", "AUGMENT"), "post_retrieval": ("pipeline_rerank", "RERANK"),
                "generation": ("pipeline_generate", "GENERATE")}
#: the registered prompts that are the thesis's printed listings (verbatim); every other prompt is the project's own
THESIS_LISTINGS = {"hublink_partial": "A.1", "hublink_final": "A.2", "hublink_components": "A.3",
                   "hublink_filter": "A.4", "pipeline_augment": "A.5", "pipeline_rerank": "A.6",
                   "pipeline_generate": "A.7"}
OWN = "hublab (not printed in the thesis)"


def origin(name: str) -> str:
    """Where the prompt registered as ``name`` comes from: its thesis listing, or the project."""
    return f"thesis Listing {THESIS_LISTINGS[name]}" if name in THESIS_LISTINGS else OWN


def to_mlflow_template(template: str) -> str:
    """A ``str.format`` template in MLflow's ``{{name}}`` syntax (``{{``/``}}`` escapes become single braces)."""
    out = []
    for literal, field, _spec, _conv in string.Formatter().parse(template):
        out.append(literal)
        if field is not None:
            out.append("{{" + field + "}}")
    return "".join(out)


def _method_prompts(retriever_type: str) -> dict[str, tuple[str, str]]:
    """Where the class declares no ``prompts`` (every baseline): the ``*_PROMPT`` string constants of the
    method's module (or sub-package), ``<type>_<name>`` → location."""
    base = f"hublab.retrievers.methods.{retriever_type}"
    try:
        mod = importlib.import_module(base)
    except ImportError:
        return {}
    modules = [mod]
    if hasattr(mod, "__path__"):
        modules += [importlib.import_module(f"{base}.{m.name}") for m in pkgutil.iter_modules(mod.__path__)]
    found: dict[str, tuple[str, str]] = {}
    for m in modules:
        for attr, value in vars(m).items():
            if attr.endswith("_PROMPT") and isinstance(value, str):
                found.setdefault(f"{retriever_type}_{attr[: -len('_PROMPT')].lower()}", (m.__name__, attr))
    return found


def prompts_used(cfg: PipelineConfig) -> dict[str, tuple[str, str]]:
    """Registry name → (module, attribute) of every template this pipeline's LLM steps send."""
    from hublab.retrievers.registry import available, get_retriever_class

    used: dict[str, tuple[str, str]] = {}
    declared = get_retriever_class(cfg.retriever_type).prompts if cfg.retriever_type in available() else {}
    if declared:  # the class names its prompts and the parameter that turns each optional step on
        defaults = {k: d for k, (_t, d) in get_retriever_class(cfg.retriever_type).declared_params().items()}
        params = {**defaults, **cfg.retriever_params}
        used.update({name: (module, attr) for name, (module, attr, flag) in declared.items()
                     if flag is None or params.get(flag)})
    else:
        used.update(_method_prompts(cfg.retriever_type))
    for pipe, (name, attr) in PIPE_PROMPTS.items():
        if getattr(cfg, pipe, {}).get("enabled"):
            used[name] = ("hublab.pipeline.prompts", attr)
    return used


def register(name: str, template: str, source: str) -> Any:
    """The registry's version of ``template`` under ``name``: the latest one when its text is the same, else a new
    version (tagged with the text's sha256, where it lives in the code and its ``origin``)."""
    import mlflow
    from mlflow import MlflowClient

    text = to_mlflow_template(template)
    digest = hashlib.sha256(text.encode()).hexdigest()
    client = MlflowClient()
    latest = client.load_prompt(f"prompts:/{name}@latest", allow_missing=True)
    if latest is not None and latest.template == text:
        if latest.tags.get("origin") != origin(name):  # a version registered before origins were recorded
            client.set_prompt_version_tag(name, latest.version, "origin", origin(name))
            latest = client.get_prompt_version(name, latest.version)
        return latest
    return mlflow.genai.register_prompt(
        name, text, commit_message=f"hublab: {source}, {origin(name)} ({'new' if latest is None else 'text changed'})",
        tags={"sha256": digest, "source": source, "origin": origin(name),
              "template_format": "mlflow {{variable}} (code: str.format)"})


def register_and_link(cfg: PipelineConfig, run_id: str, lock_dir: Any = None) -> dict[str, str]:
    """Register (where the text changed) every prompt the pipeline uses and link those versions to the run;
    returns ``{name: "name/version"}`` (also set as ``prompt.<name>`` run tags). ``lock_dir``: a folder whose
    ``.prompts.lock`` serialises registration between processes (two runs must not both add a version)."""
    from mlflow import MlflowClient

    used = prompts_used(cfg)
    if not used:
        return {}
    client = MlflowClient()
    refs: dict[str, str] = {}
    lock = None
    if lock_dir is not None:
        import fcntl

        lock = open(f"{lock_dir}/.prompts.lock", "w")  # noqa: SIM115 - held across the loop below
        fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        for name, (module, attr) in used.items():
            template = getattr(importlib.import_module(module), attr)
            pv = register(name, template, f"{module}:{attr}")
            client.link_prompt_version_to_run(run_id, pv)
            refs[name] = f"{pv.name}/{pv.version}"
    finally:
        if lock is not None:
            lock.close()
    from mlflow.entities import RunTag

    client.log_batch(run_id, tags=[RunTag("hublab.prompts", ", ".join(refs.values())),
                                   *(RunTag(f"prompt.{name}", ref) for name, ref in refs.items())])
    return refs
