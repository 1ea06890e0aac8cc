"""One validation pass before any work: the pipeline YAML, the CLI options, the dataset file and the
environment (output paths, the MLflow store, the variables ``*_env`` keys name) are checked together, before the
first model load or question, and every problem is reported at once (``InputErrors``), each located by file,
line/row and field. Nothing is created while checking (a write probe is removed at once)."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from hublab.errors import InputError, raise_all
from hublab.llm.endpoints import LLMEndpoint, llm_endpoints  # noqa: F401 (re-exported)
from hublab.pipeline.validate import strict_name_problem  # the rules every name follows, a pipeline's own too
from hublab.redact import scrub

#: seconds to wait for a tracking server before giving up (a closed port answers at once; a black hole does not)
TRACKING_CONNECT_TIMEOUT_S = 3.0
#: the LLM endpoint check (connect, then ``GET /models``): the whole check stays under 5 s for one endpoint
LLM_CONNECT_TIMEOUT_S = 2.0
LLM_READ_TIMEOUT_S = 2.5
#: the pipeline YAML is read whole and walked several times: a larger file is refused before parsing
MAX_PIPELINE_BYTES = 5 * 1024 * 1024
#: YAML nesting (mappings and sequences inside each other) a pipeline may use
MAX_YAML_DEPTH = 32
#: nodes a pipeline YAML may expand to once its aliases are followed (an alias bomb expands ×9 per level)
MAX_YAML_NODES = 20_000
#: ``evaluation.k``: rank cut-offs beyond this make no sense for a KGQA answer list (and become metric names)
MAX_EVAL_K = 1000


@dataclass
class Checked:
    """What a passed check produced: the loaded config and the warnings to print."""

    cfg: Any = None
    warnings: list[str] = field(default_factory=list)
    damaged_index: Path | None = None  # ``hublab index``: HubLab's own damaged Lite folder, to rebuild from scratch


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


def is_devnull(path: Path) -> bool:
    """``path`` is the null device (``/dev/null`` or a link to it): writes succeed and are discarded."""
    try:
        return os.path.samefile(path, os.devnull)
    except OSError:
        return False


def output_file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written as a regular output file (None if it can)."""
    path = Path(os.path.abspath(path))
    if path.exists():
        if path.is_dir():
            return "is a directory; expected a file path"
        if is_devnull(path):
            return None  # the usual way to discard an output
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
def _artifacts_problem(root: Path, experiment: str | None) -> str | None:
    """The project store's artifact folders (``mlruns/artifacts`` and the experiment's) must take new files: a
    read-only one failed the run at its first artifact, with a traceback, after its questions."""
    from hublab.config import settings as _settings

    name = experiment or str(_settings(root).section("tracking").get("experiment", "hublab"))
    arts = root / "mlruns" / "artifacts"
    try:
        folder = arts / name if (arts / name).exists() or (arts / name).is_symlink() else arts  # where runs go
        why = _probe_dir(folder) if folder.exists() or folder.is_symlink() else None
    except OSError as exc:  # a name the file system refuses (too long): one line, not a traceback
        return f"the MLflow artifacts folder of experiment {name[:40]!r}… cannot be used: {exc.strerror or exc}"
    return f"MLflow artifacts folder {folder} cannot be written: {why}" if why else None


def tracking_problem(root: Path, experiment: str | None = None) -> str | None:
    """One line if the MLflow store cannot be used: a server that does not answer (checked with a short connect,
    not MLflow's minutes of retries), a sqlite store that cannot be written or is locked, or (the project's own
    store) an artifact folder of ``experiment`` that cannot be written."""
    from hublab.config import tracking_uri

    uri = tracking_uri(root)
    parsed = urlparse(uri)
    shown = scrub(uri)
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
            from hublab.dburl import sqlite_file_problem

            if damage := sqlite_file_problem(db):
                return (f"MLflow store {shown}: {db} {damage}: move it aside and rerun (a new store starts empty; "
                        "the runs in it are lost unless you have a copy)")
            # opened for writing, not locked (another run may be writing right now); sqlite also needs to create
            # its journal beside the file
            try:
                os.close(os.open(db, os.O_RDWR))
            except OSError as exc:
                return f"MLflow store {shown} cannot be written ({exc.strerror or exc})"
            why = _probe_dir(db.parent)
            if why:
                return f"MLflow store {shown} cannot be written: {why}"
            from hublab.dburl import sqlite_lock_problem

            locked = sqlite_lock_problem(db)
            if locked:
                return f"MLflow store {shown} {locked}"
            own = db.resolve() == (root / "mlruns" / "mlflow.db").resolve()
            return _artifacts_problem(root, experiment) if own else None
        why = output_dir_problem(db.parent)
        return f"MLflow store {shown} cannot be created: {why}" if why else None
    if parsed.scheme in ("", "file"):
        return f"MLflow tracking URI {shown}: a file store is not supported by MLflow 3 (use sqlite:/// or http://)"
    from hublab.dburl import server_problem

    return server_problem(uri, f"MLflow store {shown}")  # a database server (postgresql://, mysql://)


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
    """``--experiment``, ``--study``, ``--run-name``: names, not paths, checked as the strings they become."""
    from hublab.pipeline.validate import name_problem

    for opt, value in names.items():
        if value is not None:
            what = f"{opt.replace('_', ' ')} name"
            why = name_problem(value, what) or strict_name_problem(value, what)
            if why:
                errors.append(InputError(why, field=f"--{opt.replace('_', '-')}"))


# ---------------- the pipeline file: bounded reading ----------------
_OPEN = ("BlockMappingStartToken", "BlockSequenceStartToken", "FlowMappingStartToken", "FlowSequenceStartToken")
_CLOSE = ("BlockEndToken", "FlowMappingEndToken", "FlowSequenceEndToken")


def _expanded_nodes(node: Any, limit: int) -> int:
    """How many nodes ``node`` stands for once every alias is followed (shared nodes counted each time they are
    reached, as a walk of the loaded data would); stops counting past ``limit``."""
    import yaml

    memo: dict[int, int] = {}

    def size(n: Any) -> int:
        key = id(n)
        if key in memo:
            return memo[key]
        total = 1
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                total += size(k) + size(v)
                if total > limit:
                    break
        elif isinstance(n, yaml.SequenceNode):
            for item in n.value:
                total += size(item)
                if total > limit:
                    break
        memo[key] = total
        return total

    return size(node)


def yaml_file_problem(path: Path, *, max_bytes: int = MAX_PIPELINE_BYTES, what: str = "pipeline YAML"
                      ) -> InputError | None:
    """Refuse a YAML file that would make parsing unbounded, before it is parsed: not a regular file (``/dev/zero``,
    a FIFO, a directory), larger than ``max_bytes``, nested deeper than :data:`MAX_YAML_DEPTH`, or with aliases
    expanding to more than :data:`MAX_YAML_NODES` nodes. Text and syntax errors are left to the loader (None)."""
    import yaml

    src = str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None  # the loader says "not found"
    except OSError as exc:
        return InputError(f"cannot be read: {exc.strerror or exc}", file=src)
    import stat as stat_mod

    if stat_mod.S_ISDIR(st.st_mode):
        return InputError(f"expected a {what} file, got a directory", file=src)
    if not stat_mod.S_ISREG(st.st_mode):
        return InputError(f"expected a {what} file, got a device, pipe or socket (it would be read without end)",
                          file=src)
    if st.st_size > max_bytes:
        return InputError(f"is {st.st_size / 1e6:.1f} MB; a {what} is at most {max_bytes / 1e6:.0f} MB "
                          "(hublab.preflight.MAX_PIPELINE_BYTES)", file=src)
    try:
        with open(path, "rb") as f:
            text = f.read(max_bytes + 1).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None  # the loader reports it with its position
    depth, aliases = 0, 0
    try:
        for tok in yaml.scan(text, Loader=yaml.SafeLoader):  # the scanner is iterative: no recursion on depth
            name = type(tok).__name__
            if name in _OPEN:
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    return InputError(f"nested more than {MAX_YAML_DEPTH} levels deep; a {what} is a few levels of "
                                      "mappings and lists", file=src, line=tok.start_mark.line + 1)
            elif name in _CLOSE:
                depth -= 1
            elif name == "AliasToken":
                aliases += 1
        if not aliases:
            return None
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None  # the loader reports the syntax error with its line
    if node is not None and _expanded_nodes(node, MAX_YAML_NODES) > MAX_YAML_NODES:
        return InputError(f"its {aliases} aliases (*name) expand to more than {MAX_YAML_NODES} values (an alias "
                          "bomb?); write the values out or use fewer aliases", file=src)
    return None


# ---------------- the Milvus Lite index ----------------
def lite_index_problem(cfg: Any, graph: str, pipeline: Path, st: Any, *,
                       rebuild: bool = False) -> InputError | Path | None:
    """A damaged Milvus Lite index (random bytes, a truncated or lost data file) is refused before the Lite engine
    opens it (which ends in library tracebacks, or loads a lost file as an empty collection), with the file and how
    to rebuild it. ``rebuild`` (``hublab index``): the folder HubLab keeps under models/ is returned instead, to be
    built again from scratch (everything in it is derived); a file the pipeline names itself is still refused."""
    from hublab.pipeline.resources import index_path
    from hublab.vectorstore.lite_damage import lite_damage

    uri = (cfg.vector_store or {}).get("uri")
    if uri is not None and not str(uri).endswith(".db"):
        return None  # a server: its own checks
    db = Path(uri) if uri else index_path(st, graph, cfg.retriever_type)
    if not db.exists():
        return None
    damage = lite_damage(db)
    if damage is None:
        return None
    if rebuild and not uri:
        return db
    where, what = damage
    folder = db if uri else db.parent
    return InputError(f"{what}: the Milvus Lite index {db} is damaged; rebuild it: delete {folder} and run hublab "
                      f"index --pipeline {pipeline} --graph {graph}", file=str(where), field="vector_store")


def config_value_problems(cfg: Any) -> list[InputError]:
    """Values the pipeline's own schema accepts but that make no sense on this machine or for a KGQA run:
    ``evaluation.k`` beyond :data:`MAX_EVAL_K`, a ``device`` this machine does not have (``cuda:7`` on a CPU
    machine). Each located by file, line and field."""
    from hublab.pipeline.config import flatten

    lines: dict[str, int] = {}
    with contextlib.suppress(Exception):  # the file was loaded already; lines are a courtesy
        from hublab.yaml_strict import load_yaml

        _, lines = load_yaml(Path(cfg.source).read_text(encoding="utf-8"), source=str(cfg.source))
    out: list[InputError] = []
    k = cfg.evaluation.get("k")
    if isinstance(k, int) and not isinstance(k, bool) and k > MAX_EVAL_K:
        out.append(InputError(f"expected a rank cut-off from 1 to {MAX_EVAL_K}, got {k}", file=cfg.source,
                              line=lines.get("evaluation.k"), field="evaluation.k"))
    for key, value in flatten(cfg.to_dict()).items():
        if key.rsplit(".", 1)[-1] == "device" and isinstance(value, str):
            why = device_problem(value)
            if why:
                out.append(InputError(why, file=cfg.source, line=lines.get(key), field=key))
    return out


def device_problem(device: str) -> str | None:
    """Why torch cannot use ``device`` here (None if it can): ``cuda:N`` needs N+1 CUDA devices, ``mps`` Apple's."""
    d = device.strip().lower()
    if d in ("", "cpu", "auto"):
        return None
    m = re.fullmatch(r"cuda(?::(\d+))?", d)
    if m:
        index = int(m.group(1) or 0)
        try:
            import torch

            n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        except Exception:  # noqa: BLE001 - no usable torch: no CUDA device either
            n = 0
        if index >= n:
            have = f"{n} CUDA device{'s' if n != 1 else ''}" if n else "no CUDA device"
            return f"device {device!r} is not on this machine (it has {have}); use cpu" + (
                f" or cuda:0..cuda:{n - 1}" if n else "")
        return None
    if d == "mps":
        try:
            import torch

            ok = torch.backends.mps.is_available()
        except Exception:  # noqa: BLE001
            ok = False
        return None if ok else "device 'mps' is not available on this machine; use cpu"
    return None


def check_run(pipeline: Path, graph: str, dataset: str | None, *, settings: Any, experiment: str | None = None,
              output: Path | None = None, report_dir: Path | None = None, stats_out: Path | None = None,
              llm_base_url: str | None = None, tracking: bool = True, strict: bool = False,
              hub_types: list[str] | None = None, rebuild_damaged: bool = False) -> Checked:
    """Everything ``hublab run`` / ``index`` / ``ask`` can refuse without doing any work; raises ``InputErrors``.
    ``strict``: a user's KGQA file whose golden ids are not all in the graph is refused (else a warning).
    ``hub_types`` (``--hub-type``, else the graph's declared ones) set HubLink's ``hub_types`` in the loaded config;
    a hub type without instances in the graph is refused, naming the graph's most frequent types.
    ``rebuild_damaged`` (``hublab index``): a damaged Lite index HubLab keeps is named in ``damaged_index``."""
    from hublab.pipeline.config import load_pipeline

    errors: list[InputError] = []
    # names first: a bad --experiment is reported with every other problem, but no graph is resolved or read for it
    # and it never reaches the artifact folder probe (a 400-character name is a path the file system refuses)
    bad_names: list[InputError] = []
    check_names(bad_names, experiment=experiment)
    names_ok = not bad_names
    out = Checked()
    if llm_base_url:
        from hublab.redact import secret_value_problem

        why = secret_value_problem(llm_base_url)
        if why:
            errors.append(InputError(f"{why} (value not shown)", field="--llm-base-url / $HUBLAB_LLM_BASE_URL"))
    if not errors:
        # a path, a name as `hublab list` prints it (pipelines/<name>.yaml), or an installed method's name
        from hublab.method_pipelines import resolve_pipeline

        pipeline = _catch(errors, resolve_pipeline, settings, pipeline) or pipeline
        bounded = yaml_file_problem(Path(pipeline)) if not errors else None
        if bounded is not None:
            errors.append(bounded)
        elif not errors:
            out.cfg = _catch(errors, load_pipeline, pipeline)
        if out.cfg is not None:
            from hublab.preflight_values import embedder_path_problem, key_value_problems

            errors.extend(config_value_problems(out.cfg))
            errors.extend(key_value_problems(out.cfg))
            if (bad_model := embedder_path_problem(out.cfg)) is not None:
                errors.append(bad_model)
    from hublab.pipeline.resources import graph_source

    source = _catch(errors, graph_source, graph, settings) if names_ok else None
    if source is not None and not source.builtin:
        # a user's file or endpoint is read here, once per process (the run reuses it), with a bar on a terminal:
        # a large file parses for minutes
        from hublab.pipeline.resources import load_graph
        from hublab.progress import want_progress

        source = source if _catch(errors, load_graph, graph, settings, progress=want_progress(None)) else None
    graph_ok = source is not None
    if out.cfg is not None and graph_ok:
        _catch(errors, apply_hub_types, out.cfg, hub_types or [], source, settings)
    if out.cfg is not None and graph_ok and not errors:
        damaged = lite_index_problem(out.cfg, graph, pipeline, settings, rebuild=rebuild_damaged)
        if isinstance(damaged, Path):
            out.damaged_index = damaged
        elif damaged is not None:
            errors.append(damaged)
    pairs = None
    if dataset is not None:
        from hublab.datasets.catalog import duplicate_uids, is_dataset_file, load_dataset
        from hublab.preflight_values import dataset_name_problem, dataset_text_problems

        named = dataset_name_problem(dataset) if is_dataset_file(dataset) else None
        if named is not None:
            errors.append(named)
        pairs = _catch(errors, load_dataset, settings, dataset)
        if pairs:
            errors.extend(dataset_text_problems(pairs, dataset))
        if pairs and is_dataset_file(dataset):  # a built-in set's quirks are said once, by `hublab data datasets`
            for uid, rows in duplicate_uids(pairs).items():
                out.warnings.append(f"dataset {dataset}: uid {uid!r} appears in rows {rows}; each row is run and "
                                    "scored as its own question")
        if pairs and graph_ok:
            _catch(errors, golden_id_check, out, pairs, dataset, graph, settings, strict)
    errors.extend(bad_names)
    for opt, path, probe in (("--output", output, output_file_problem), ("--stats", stats_out, output_file_problem),
                             ("--report-dir", report_dir, output_dir_problem)):
        if path is not None:
            why = probe(path)
            if why:
                errors.append(InputError(why, file=str(path), field=opt))
    if tracking and names_ok:
        bound_tracking_retries()
        why = tracking_problem(settings.root, experiment)
        if why:
            errors.append(InputError(why, field="MLFLOW_TRACKING_URI"))
    raise_all(errors)
    if out.cfg is not None:
        out.warnings.extend(missing_env_vars(out.cfg))
        if pairs:
            out.warnings.extend(blank_answer_warning(out.cfg, pairs, dataset))
    return out


def hub_types_for(retriever_type: str, given: list[str], source: Any) -> list[str] | None:
    """The rule every door shares (``pipeline/hub_types.py``), re-exported for the CLI."""
    from hublab.pipeline.hub_types import hub_types_for as rule

    return rule(retriever_type, given, source)


def apply_hub_types(cfg: Any, given: list[str], source: Any, settings: Any) -> None:
    """Set the retriever's ``hub_types`` from ``--hub-type`` (or the graph's declared hub types), then check that
    each hub type it will use has instances in the graph (loaded here: the run loads it next anyway)."""
    from hublab.pipeline.hub_types import apply_hub_types as apply
    from hublab.pipeline.hub_types import refuse_empty_hub_types
    from hublab.pipeline.resources import load_graph

    if apply(cfg, given, source) is None:
        return
    if source.builtin and not Path(source.location).exists():
        return  # not built yet: the runner says so
    refuse_empty_hub_types(cfg, load_graph(source.arg, settings), source.shown,
                           given=bool(given) or not source.builtin)


def golden_id_check(out: Checked, pairs: list, dataset: str, graph: str, settings: Any, strict: bool) -> None:
    """A user's KGQA file (a built-in set is remapped to its graph when built): golden ids written for another graph
    are refused (``check_golden_ids``); rows naming ids the graph lacks are a warning with the count and the rows,
    or, with ``strict``, refused (each such triple can never be retrieved: a silent 0 on it otherwise)."""
    from hublab.datasets.catalog import (
        check_golden_ids,
        is_dataset_file,
        resolve_statements,
        rows_with_missing_golden_ids,
    )
    from hublab.pipeline.resources import graph_source, load_graph

    src = graph_source(graph, settings)
    if not is_dataset_file(dataset) or (src.builtin and not Path(src.location).exists()):
        return  # a graph not built yet is the runner's one line ("run `dvc repro`"), not this check's
    kg = load_graph(graph, settings)
    pairs, lacking = resolve_statements(pairs, kg)
    check_golden_ids(pairs, kg, dataset=dataset, graph_name=graph)
    missing = rows_with_missing_golden_ids(pairs, kg)
    for row, statements in lacking.items():
        missing.setdefault(row, []).extend(statements)
    if not missing:
        return
    shown = "; ".join(f"row {r}: {', '.join(ids[:3])}{' …' if len(ids) > 3 else ''}"
                      for r, ids in list(missing.items())[:5])
    more = f"; and {len(missing) - 5} more rows" if len(missing) > 5 else ""
    what = (f"{len(missing)} of {len(pairs)} questions name golden triple ids (or statements) that are not in graph "
            f"{graph!r} ({shown}{more}): those triples can never be retrieved")
    if strict:
        raise InputError(f"{what} (--strict)", file=dataset, row=next(iter(missing)), field="golden_triples")
    out.warnings.append(f"dataset {dataset}: {what}, so these rows score as if unanswerable on them (--strict "
                        "refuses such a file)")


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
        print(f"warning: {scrub(w)}", file=sys.stderr)
