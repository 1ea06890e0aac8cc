"""Strict checks of a pipeline config's sections, all problems at once, before anything is built.

YAML hands us strings, booleans and floats as the user wrote them; nothing here coerces: ``enabled: "false"``
is not a boolean (Python would read it as true), ``n_results: true`` is not an integer, ``.nan`` is not a share.
Values that are credentials (``user:pass@`` URLs, ``sk-…`` keys, bearer tokens) are refused in every field,
and the error never echoes them. Names must be names (no path separators, no ``..``): they become folders.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from hublab.errors import InputError
from hublab.redact import secret_value_problem

Check = Callable[[Any], str | None]  # value -> problem (None = fine)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NAME = re.compile(r"^[^/\\\x00-\x1f]+$")


# ---------------- value checks ----------------
def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def boolean(v: Any) -> str | None:
    if isinstance(v, bool):
        return None
    return f"expected true or false, got {_show(v)}" + (" (a quoted string is not a boolean)"
                                                         if isinstance(v, str) else "")


def integer(lo: int | None = None, hi: int | None = None, *, optional: bool = False) -> Check:
    def check(v: Any) -> str | None:
        if v is None and optional:
            return None
        if not _is_int(v):
            return f"expected an integer, got {_show(v)}"
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            return f"expected an integer in {_range(lo, hi)}, got {v}"
        return None
    return check


def number(lo: float | None = None, hi: float | None = None, *, optional: bool = False,
           lo_open: bool = False) -> Check:
    def check(v: Any) -> str | None:
        if v is None and optional:
            return None
        if not _is_num(v):
            return f"expected a number, got {_show(v)}"
        if not math.isfinite(v):
            return f"expected a finite number, got {v}"
        if (lo is not None and (v < lo or (lo_open and v == lo))) or (hi is not None and v > hi):
            return f"expected a number in {_range(lo, hi, lo_open)}, got {v}"
        return None
    return check


def string(*, optional: bool = False, choices: tuple[str, ...] | None = None) -> Check:
    def check(v: Any) -> str | None:
        if v is None and optional:
            return None
        if not isinstance(v, str):
            return f"expected a string, got {_show(v)}"
        if choices is not None and v not in choices:
            return f"expected one of {list(choices)}, got {v!r}"
        return None
    return check


def _not_text(v: Any, what: str) -> str | None:
    return None if isinstance(v, str) else f"expected {what}, got {_show(v)}"


def env_name(v: Any) -> str | None:
    """An environment variable's *name*; a pasted key is refused without being echoed."""
    if v is None or (why := _not_text(v, "the name of an environment variable")):
        return None if v is None else why
    if secret_value_problem(v) or not _ENV_NAME.match(v):
        return "expected the name of an environment variable (letters, digits, _), not a key or other value"
    return None


def url(v: Any) -> str | None:
    if v is None or (why := _not_text(v, "a URL")):
        return None if v is None else why
    if not re.match(r"^https?://[^\s]+$", v):
        return "expected an http(s):// URL"
    return None


def str_list(*, choices: tuple[str, ...] | None = None) -> Check:
    def check(v: Any) -> str | None:
        if v is None:
            return None
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            return f"expected a list of strings, got {_show(v)}"
        bad = [x for x in v if choices is not None and x not in choices]
        if bad:
            return f"unknown {bad}; known: {list(choices or ())}"
        return None
    return check


def mapping(v: Any) -> str | None:
    return None if v is None or isinstance(v, dict) else f"expected a mapping, got {_show(v)}"


def _show(v: Any) -> str:
    if isinstance(v, str):
        return "a string" if secret_value_problem(v) else f"the string {v[:60]!r}"
    return f"{type(v).__name__} {v!r}"[:80]


def _range(lo: float | None, hi: float | None, lo_open: bool = False) -> str:
    left = "(" if lo_open else "["
    return f"{left}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"


# ---------------- section schemas ----------------
_LLM_COMMON: dict[str, Check] = {"backend": string(choices=("none", "openai", "llamacpp")), "model": string(),
                                 "cache": boolean, "temperature": number(0, 2, optional=True),
                                 "max_tokens": integer(1, optional=True)}
LLM_SCHEMA: dict[str, dict[str, Check]] = {
    "none": _LLM_COMMON,
    "openai": {**_LLM_COMMON, "base_url": url, "api_key_env": env_name, "timeout_s": number(0, lo_open=True),
               "max_retries": integer(0), "retry_backoff_s": number(0), "reasoning_effort": string(optional=True),
               "request_rules": string(choices=("auto", "reasoning", "chat", "local")),
               "price_input_per_1m": number(0), "price_output_per_1m": number(0)},
    "llamacpp": {**_LLM_COMMON, "model_path": string(optional=True), "n_ctx": integer(1),
                 "n_threads": integer(1, optional=True), "n_gpu_layers": integer(-1)},
}
EMBEDDER_SCHEMA: dict[str, Check] = {"backend": string(choices=("sentence-transformers", "st")),
                                     "model": string(optional=True), "device": string(), "batch_size": integer(1),
                                     "cache": boolean}
VECTOR_STORE_SCHEMA: dict[str, Check] = {"uri": string(optional=True), "token_env": env_name,
                                         "backend": string(choices=("milvus",)),
                                         "exact": string(choices=("auto", "always", "never")),
                                         "exact_max_vectors": integer(0, optional=True), "index": mapping,
                                         "timeout_s": number(0, lo_open=True, optional=True)}
RAGAS_SCHEMA: dict[str, Check] = {"base_url": url, "model": string(), "api_key_env": env_name}


def _metric_names() -> tuple[str, ...]:
    from hublab.evaluation.generation import LLM_JUDGED, NON_LLM

    return NON_LLM + LLM_JUDGED


def _pipe_schema(pipe: str) -> dict[str, Check]:
    out: dict[str, Check] = {"enabled": boolean, "technique": string(optional=True), "llm": mapping}
    if pipe == "post_retrieval":
        out["top_k"] = integer(1, optional=True)
    return out


def evaluation_schema() -> dict[str, Check]:
    return {"k": integer(1), "generation_metrics": str_list(choices=_metric_names()),
            "bertscore_model": string(optional=True), "bertscore_layers": integer(1), "judge_llm": mapping,
            "ragas_llm": mapping, "question_timeout_s": number(0, lo_open=True, optional=True),
            "run_timeout_s": number(0, lo_open=True, optional=True), "max_failure_share": number(0, 1)}


class Problems:
    """Collects located errors; ``lines`` maps dotted key paths to their YAML line."""

    def __init__(self, source: str, lines: dict[str, int] | None = None) -> None:
        self.source = source
        self.lines = lines or {}
        self.errors: list[InputError] = []

    def add(self, field: str | None, message: str) -> None:
        self.errors.append(InputError(message, file=self.source, field=field, line=self.line_of(field)))

    def extend(self, errors: list[InputError]) -> None:
        for e in errors:
            if e.line is None and e.field and e.file == self.source and self.line_of(e.field):
                e = InputError(e.detail, file=e.file, row=e.row, field=e.field, line=self.line_of(e.field))
            self.errors.append(e)

    def line_of(self, field: str | None) -> int | None:
        while field:
            if field in self.lines:
                return self.lines[field]
            field = field.rpartition(".")[0]
        return None


def check_section(section: dict[str, Any], schema: dict[str, Check], prefix: str, problems: Problems) -> None:
    unknown = sorted(set(section) - set(schema))
    for k in unknown:
        problems.add(f"{prefix}.{k}", f"unknown key; expected some of {sorted(schema)}")
    for k, check in schema.items():
        if k in section:
            why = check(section[k])
            if why:
                problems.add(f"{prefix}.{k}", why)


def check_llm(section: Any, prefix: str, problems: Problems) -> None:
    if not isinstance(section, dict):
        return
    backend = section.get("backend", "none")
    if backend not in LLM_SCHEMA:
        problems.add(f"{prefix}.backend", f"unknown llm backend {backend!r}; expected none, openai or llamacpp")
        return
    check_section(section, LLM_SCHEMA[backend], prefix, problems)


def check_secret_values(data: Any, prefix: str, problems: Problems) -> None:
    """Every string value at any depth: a credential in a URL or a key-looking value is refused (not echoed)."""
    if isinstance(data, dict):
        for k, v in data.items():
            check_secret_values(v, f"{prefix}.{k}" if prefix else str(k), problems)
    elif isinstance(data, list | tuple):
        for i, v in enumerate(data):
            check_secret_values(v, f"{prefix}[{i}]", problems)
    elif isinstance(data, str):
        why = secret_value_problem(data)
        if why:
            problems.add(prefix, f"{why} (value not shown)")


#: a name that becomes a folder, an MLflow key and a URL path segment (``--experiment``, ``--study``, a pipeline's
#: ``name``): at most this many characters (a 300-character name ran every question, then died on ``File name too
#: long``)
MAX_NAME_CHARS = 100
#: what a name may hold once percent-decoded: letters, digits, ``_ - .`` and spaces, not starting with ``.``
_SAFE_NAME = re.compile(r"[^\W][\w.\- ]*")


def _decoded(value: str) -> str:
    """``value`` percent-decoded until it no longer changes (``%252e`` → ``%2e`` → ``.``): what MLflow and a URL
    or file path may finally make of it."""
    for _ in range(8):
        nxt = unquote(value)
        if nxt == value:
            break
        value = nxt
    return value


def strict_name_problem(value: str, what: str = "name") -> str | None:
    """A name checked as the string it becomes (a folder ``mlruns/artifacts/<name>``, an MLflow key, a lock file,
    a URL segment): decoded first, then a safe character set and a length every store and file system accept.
    Never echoes the value (it may be a pasted key); names the offending characters only."""
    decoded = _decoded(value)
    if decoded != value and (re.search(r"[/\\\x00-\x1f\x7f]", decoded) or ".." in decoded):
        return (f"the {what} is percent-encoded and decodes to a path ('/', '\\', '..' or control characters): "
                "names must not contain them, encoded or not")
    if len(value) > MAX_NAME_CHARS:
        return (f"the {what} is {len(value)} characters long; at most {MAX_NAME_CHARS} (it becomes a folder name and "
                "an MLflow key)")
    if not _SAFE_NAME.fullmatch(value):
        bad = sorted({c for c in value if not (c.isalnum() or c in "_-. ")})
        shown = " ".join(repr(c) for c in bad[:6]) or "a leading '.'"
        return (f"the {what} may hold only letters, digits, '_', '-', '.' and spaces, not starting with '.' "
                f"(found {shown})")
    return None



def name_problem(value: Any, what: str = "name") -> str | None:
    """A name that becomes a folder or an MLflow key: no path separators, no ``..``, no control characters."""
    if not isinstance(value, str) or not value.strip():
        return f"expected a non-empty {what}"
    if not _NAME.match(value) or ".." in value or value.strip() != value:
        return f"the {what} must not contain '/', '\\', '..', control characters or surrounding blanks"
    if secret_value_problem(value):
        return f"the {what} must not look like a credential"
    return None


def check_config(data: dict[str, Any], problems: Problems) -> None:
    """The sections other than ``retriever`` (checked by the retriever's own parameter model) and
    ``search_space``/``shape_space`` (checked by the tuner); credentials in values: :func:`check_secret_values`."""
    for key in ("name", "description"):
        if key in data and data[key] is not None and not isinstance(data[key], str):
            problems.add(key, f"expected a string, got {_show(data[key])}")
    if isinstance(data.get("name"), str):
        # the rules of --experiment: the name becomes the MLflow run name and, with --report-dir, a folder
        why = name_problem(data["name"], "pipeline name") or strict_name_problem(data["name"], "pipeline name")
        if why:
            problems.add("name", why)
    if isinstance(data.get("llm"), dict):
        check_llm(data["llm"], "llm", problems)
    if isinstance(data.get("embedder"), dict):
        check_section(data["embedder"], EMBEDDER_SCHEMA, "embedder", problems)
    if isinstance(data.get("vector_store"), dict):
        check_section(data["vector_store"], VECTOR_STORE_SCHEMA, "vector_store", problems)
        from hublab.vectorstore.index_spec import index_problems

        if isinstance(data["vector_store"].get("index"), dict):  # a non-mapping is reported by the schema
            for where, why in index_problems(data["vector_store"]["index"]):
                problems.add(where, why)
    for pipe in ("pre_retrieval", "post_retrieval", "generation"):
        sec = data.get(pipe)
        if isinstance(sec, dict):
            check_section(sec, _pipe_schema(pipe), pipe, problems)
            check_llm(sec.get("llm"), f"{pipe}.llm", problems)
    ev = data.get("evaluation")
    if isinstance(ev, dict):
        check_section(ev, evaluation_schema(), "evaluation", problems)
        check_llm(ev.get("judge_llm"), "evaluation.judge_llm", problems)
        if isinstance(ev.get("ragas_llm"), dict):
            check_section(ev["ragas_llm"], RAGAS_SCHEMA, "evaluation.ragas_llm", problems)
