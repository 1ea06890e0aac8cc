"""One validation pass before any work: the pipeline YAML, the CLI options, the dataset file and the
environment (output paths, the MLflow store, the variables ``*_env`` keys name) are checked together, before the
first model load or question, and every problem is reported at once (``InputErrors``), each located by file,
line/row and field. Nothing is created while checking (a write probe is removed at once)."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from hublab.errors import InputError, raise_all
from hublab.llm.endpoints import LLMEndpoint, llm_endpoints  # noqa: F401 (re-exported)
from hublab.redact import redact

#: seconds to wait for a tracking server before giving up (a closed port answers at once; a black hole does not)
TRACKING_CONNECT_TIMEOUT_S = 3.0
#: the LLM endpoint check (connect, then ``GET /models``): the whole check stays under 5 s for one endpoint
LLM_CONNECT_TIMEOUT_S = 2.0
LLM_READ_TIMEOUT_S = 2.5


@dataclass
class Checked:
    """What a passed check produced: the loaded config and the warnings to print."""

    cfg: Any = None
    warnings: list[str] = field(default_factory=list)


def _catch(errors: list[InputError], fn, *args: Any, **kw: Any) -> Any:
    try:
        return fn(*args, **kw)
    except InputError as exc:
        errors.extend(getattr(exc, "errors", [exc]))
    return None


# ---------------- paths ----------------
def _probe_dir(directory: Path) -> str | None:
    """Can a file be created in ``directory`` (as this user, on this file system)? Probed, not guessed:
    ``os.access`` says yes to root on a read-only mount or under /proc."""
    try:
        fd, name = tempfile.mkstemp(prefix=".hublab-probe-", dir=directory)
    except OSError as exc:
        return f"cannot create files in {directory}: {exc.strerror or exc}"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
    return None


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def output_file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written as a regular output file (None if it can)."""
    path = Path(os.path.abspath(path))
    if path.exists():
        if path.is_dir():
            return "is a directory; expected a file path"
        if not path.is_file():
            return "is not a regular file (a device or pipe: the write would fail after the run)"
        try:
            with path.open("ab"):
                pass
        except OSError as exc:
            return f"cannot be written: {exc.strerror or exc}"
        return None
    anc = _nearest_existing(path.parent)
    if not anc.is_dir():
        return f"{anc} is not a directory"
    return _probe_dir(anc)


def output_dir_problem(path: Path) -> str | None:
    """Why files cannot be written under directory ``path`` (and its siblings, e.g. ``<path>.partial-…``)."""
    path = Path(os.path.abspath(path))
    if path.exists() and not path.is_dir():
        return "exists and is not a directory"
    anc = _nearest_existing(path)
    if not anc.is_dir():
        return f"{anc} is not a directory"
    problem = _probe_dir(anc)
    if problem is None and path.exists() and path.parent.exists():
        problem = _probe_dir(path.parent)  # partial-run reports go beside it
    return problem


# ---------------- the tracking store ----------------
def tracking_problem(root: Path) -> str | None:
    """One line if the MLflow store cannot be used: a server that does not answer (checked with a short connect,
    not MLflow's minutes of retries) or a sqlite store that cannot be written."""
    from hublab.config import tracking_uri

    uri = tracking_uri(root)
    parsed = urlparse(uri)
    shown = redact(uri)
    if parsed.scheme in ("http", "https"):
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            with socket.create_connection((parsed.hostname or "127.0.0.1", port), timeout=TRACKING_CONNECT_TIMEOUT_S):
                pass
        except OSError as exc:
            return f"MLflow tracking server {shown} is unreachable ({exc.strerror or exc})"
        return None
    if parsed.scheme == "sqlite":
        db = Path(uri[len("sqlite:///"):]) if uri.startswith("sqlite:///") else None
        if db is None or str(db) in ("", ":memory:"):
            return None
        if db.exists():
            if not db.is_file():
                return f"MLflow store {shown}: {db} is not a file"
            # opened for writing, not locked (another run may be writing right now); sqlite also needs to create
            # its journal beside the file
            try:
                os.close(os.open(db, os.O_RDWR))
            except OSError as exc:
                return f"MLflow store {shown} cannot be written ({exc.strerror or exc})"
            why = _probe_dir(db.parent)
            return f"MLflow store {shown} cannot be written: {why}" if why else None
        why = output_dir_problem(db.parent)
        return f"MLflow store {shown} cannot be created: {why}" if why else None
    if parsed.scheme in ("", "file"):
        return f"MLflow tracking URI {shown}: a file store is not supported by MLflow 3 (use sqlite:/// or http://)"
    return None


def bound_tracking_retries() -> None:
    """MLflow retries an unreachable server for minutes by default; bound it to seconds (user settings win)."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")


# ---------------- environment ----------------
def missing_env_vars(cfg: Any) -> list[str]:
    """``*_env`` keys of the config naming a variable that is not set (the request would go out unauthenticated)."""
    from hublab.pipeline.config import flatten

    out = []
    for key, value in flatten(cfg.to_dict()).items():
        if key.endswith("_env") and isinstance(value, str) and value and not os.environ.get(value):
            out.append(f"{cfg.source}: field '{key}' names environment variable {value}, which is not set")
    return out


# ---------------- the LLM endpoint ----------------
def _get_models(ep: LLMEndpoint, key: str | None) -> Any:
    """``GET <base_url>/models`` with a short connect and read timeout and no retries (httpx, which the OpenAI
    client itself uses; the client would cost a second of imports before the check can say anything)."""
    import httpx

    from hublab.llm.factory import SDK_ORG, SDK_PROJECT

    url = (ep.base_url or "https://api.openai.com/v1").rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    # the organization and project the client sends (the OpenAI SDK reads them from the environment)
    for header, var in (("OpenAI-Organization", SDK_ORG), ("OpenAI-Project", SDK_PROJECT)):
        if os.environ.get(var):
            headers[header] = os.environ[var]
    return httpx.get(url, headers=headers, timeout=httpx.Timeout(LLM_READ_TIMEOUT_S, connect=LLM_CONNECT_TIMEOUT_S))


def llm_endpoint_problem(ep: LLMEndpoint) -> tuple[str | None, str | None]:
    """(error, warning) for one endpoint, each one line that says what is missing and how to fix it: no key where
    OpenAI's API needs one, nothing answering at the URL, a key the server refuses, a model it does not serve.
    A server without ``/models`` is let through with a warning (the first call will tell)."""
    import httpx

    from hublab.llm.requests import is_openai_endpoint, where

    at = where(ep.base_url)
    fix_url = "or point every LLM at a running OpenAI-compatible server with --llm-base-url http://HOST:PORT/v1 " \
              "($HUBLAB_LLM_BASE_URL; $OPENAI_BASE_URL where the pipeline's base_url is null)"
    key = os.environ.get(ep.key_env) if ep.key_env else None
    if not key and is_openai_endpoint(ep.base_url):
        return (f"{ep.field}: model {ep.model} at {at} needs an API key, but ${ep.key_env} is not set: export "
                f"{ep.key_env}=<your key> (the variable is {ep.field}.api_key_env), {fix_url}"), None
    try:
        resp = _get_models(ep, key)
    except httpx.HTTPError as exc:  # refused, unresolvable, timed out
        why = str(exc)[:80] or "no reply"
        return f"{ep.field}: nothing answers at {at} ({type(exc).__name__}: {why}): start the server, {fix_url}", None
    if resp.status_code in (401, 403):
        how = (f"${ep.key_env} holds a key it does not accept" if key else
               "it needs an API key: name the variable holding it with $HUBLAB_LLM_API_KEY_ENV or "
               f"{ep.field}.api_key_env")
        return f"{ep.field}: {at} refused the request (HTTP {resp.status_code}): {how}", None
    try:
        resp.raise_for_status()
        models = sorted(str(m["id"]) for m in resp.json()["data"])
    except (httpx.HTTPStatusError, ValueError, KeyError, TypeError) as exc:
        return None, f"{ep.field}: {at} did not list its models ({type(exc).__name__}); model {ep.model} unchecked"
    if ep.model in models or f"{ep.model}:latest" in models:  # Ollama lists `llama3.2:latest`, serves `llama3.2`
        return None, None
    shown = ", ".join(models[:8]) + (f" … ({len(models)} in all)" if len(models) > 8 else "")
    line = f"{ep.field}: {at} does not serve model {ep.model} (it lists: {shown or 'none'})"
    if not is_openai_endpoint(ep.base_url) and len(models) == 1:
        # a single-model server (llama.cpp) answers with what it loaded, whatever the request names
        return None, f"{line}; a single-model server answers with the model it loaded"
    return f"{line}: choose one with --llm-model ($HUBLAB_LLM_MODEL)", None


def check_llm(cfg: Any) -> list[str]:
    """Before the first question of an LLM pipeline: every endpoint's key, server and model. Raises
    ``InputErrors`` (one line per endpoint that cannot work); returns the warnings."""
    errors: list[InputError] = []
    warnings: list[str] = []
    for ep in llm_endpoints(cfg):
        error, warning = llm_endpoint_problem(ep)
        if error:
            errors.append(InputError(error))
        if warning:
            warnings.append(warning)
    raise_all(errors)
    return warnings


# ---------------- the pass ----------------
def check_names(errors: list[InputError], **names: str | None) -> None:
    """``--experiment``, ``--study``, ``--run-name``: names, not paths."""
    from hublab.pipeline.validate import name_problem

    for opt, value in names.items():
        if value is not None:
            why = name_problem(value, f"{opt.replace('_', ' ')} name")
            if why:
                errors.append(InputError(why, field=f"--{opt.replace('_', '-')}"))


def check_run(pipeline: Path, graph: str, dataset: str | None, *, settings: Any, experiment: str | None = None,
              output: Path | None = None, report_dir: Path | None = None, stats_out: Path | None = None,
              llm_base_url: str | None = None, tracking: bool = True) -> Checked:
    """Everything ``hublab run`` / ``index`` / ``ask`` can refuse without doing any work; raises ``InputErrors``."""
    from hublab.pipeline.config import load_pipeline

    errors: list[InputError] = []
    out = Checked()
    if llm_base_url:
        from hublab.redact import secret_value_problem

        why = secret_value_problem(llm_base_url)
        if why:
            errors.append(InputError(f"{why} (value not shown)", field="--llm-base-url / $HUBLAB_LLM_BASE_URL"))
    if not errors:
        # a path, or a name as `hublab list` prints it (pipelines/<name>.yaml)
        out.cfg = _catch(errors, lambda: load_pipeline(settings.pipeline_file(pipeline)))
    _catch(errors, settings.graph_file, graph)
    pairs = None
    if dataset is not None:
        from hublab.datasets.catalog import duplicate_uids, load_dataset

        pairs = _catch(errors, load_dataset, settings, dataset)
        if pairs:
            for uid, rows in duplicate_uids(pairs).items():
                out.warnings.append(f"dataset {dataset}: uid {uid!r} appears in rows {rows}; each row is run and "
                                    "scored as its own question")
    check_names(errors, experiment=experiment)
    for opt, path, probe in (("--output", output, output_file_problem), ("--stats", stats_out, output_file_problem),
                             ("--report-dir", report_dir, output_dir_problem)):
        if path is not None:
            why = probe(path)
            if why:
                errors.append(InputError(why, file=str(path), field=opt))
    if tracking:
        bound_tracking_retries()
        why = tracking_problem(settings.root)
        if why:
            errors.append(InputError(why, field="MLFLOW_TRACKING_URI"))
    raise_all(errors)
    if out.cfg is not None:
        out.warnings.extend(missing_env_vars(out.cfg))
        if pairs:
            out.warnings.extend(blank_answer_warning(out.cfg, pairs, dataset))
    return out


#: generation metrics scored against the dataset's golden answer
GOLDEN_ANSWER_METRICS = ("bleu", "rouge", "bertscore", "semantic_similarity", "non_llm_string_similarity",
                         "factual_correctness", "instruction_following")


def blank_answer_warning(cfg: Any, pairs: list, dataset: str | None) -> list[str]:
    """A minimal KGQA file has no ``golden_answer``: answer metrics would score against an empty string. Said once,
    before the run, naming the metrics and how many questions (never a silent 0)."""
    metrics = [m for m in cfg.evaluation.get("generation_metrics") or [] if m in GOLDEN_ANSWER_METRICS]
    blank = [p.uid for p in pairs if not (p.golden_answer or "").strip()]
    if not (metrics and blank and cfg.generation.get("enabled")):
        return []
    return [f"dataset {dataset}: {len(blank)} of {len(pairs)} questions have no golden_answer (first: {blank[0]!r}); "
            f"{', '.join(metrics)} score their generated answer against an empty string"]


def print_warnings(warnings: list[str]) -> None:
    for w in warnings:
        print(f"warning: {redact(w)}", file=sys.stderr)
