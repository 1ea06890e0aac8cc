"""Values a run would trip over deep inside a library (a traceback, or a run name that breaks its own log line),
refused before any work with the file, row and field: a lone surrogate in a dataset's text,
a control character in a dataset file's name, an API key an HTTP header cannot carry, an embedder path that is not
a model folder. Called by :func:`hublab.preflight.check_run`."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path
from typing import Any

from hublab.errors import InputError

#: text fields of a KGQA row (``QAPair``) that reach MLflow, the checkpoint and the reports
_TEXT_FIELDS = ("uid", "question", "golden_answer", "topic_entity_id", "topic_entity_value")


def _unprintable(text: str) -> list[str]:
    """Control, format (bidirectional overrides) and surrogate characters, as their escapes."""
    return sorted({repr(c)[1:-1] for c in text if unicodedata.category(c) in ("Cc", "Cf", "Cs")})


def dataset_text_problems(pairs: list[Any], dataset: str) -> list[InputError]:
    """A lone surrogate (a JSON ``\\ud800`` escape) is not text: UTF-8 cannot hold it, so the first file or store
    that writes the question fails. One error per row, naming the field."""
    out: list[InputError] = []
    for row, pair in enumerate(pairs, start=1):
        fields = [(f, getattr(pair, f, None)) for f in _TEXT_FIELDS]
        fields += [("golden_triples", t) for t in getattr(pair, "golden_triples", None) or []]
        for name, value in fields:
            if isinstance(value, str) and any("\ud800" <= c <= "\udfff" for c in value):
                out.append(InputError("a lone surrogate (a \\ud800-\\udfff escape without its pair) is not text: "
                                      "no UTF-8 file or store can hold it; fix or drop the character",
                                      file=dataset, row=row, field=name))
                break
    return out


def dataset_name_problem(dataset: str) -> InputError | None:
    """A dataset file whose name holds control or bidirectional-format characters: the name becomes the run's name
    and part of every log line about it (a newline split them)."""
    bad = _unprintable(Path(dataset).name)
    if not bad:
        return None
    shown = "".join(repr(c)[1:-1] if unicodedata.category(c) in ("Cc", "Cf", "Cs") else c for c in dataset)
    return InputError(f"the file name holds control or format characters ({' '.join(bad[:6])}); rename the file "
                      "(its name becomes the run's name)", file=shown, field="--dataset")


def key_value_problems(cfg: Any) -> list[InputError]:
    """``*_env`` variables whose value an HTTP header cannot carry (non-ASCII letters, control characters): the
    request would fail inside the HTTP library. The value is never shown."""
    from hublab.pipeline.config import flatten

    out: list[InputError] = []
    for key, name in flatten(cfg.to_dict()).items():
        if not (key.endswith("_env") and isinstance(name, str) and name):
            continue
        value = os.environ.get(name) or ""
        if value and (not value.isascii() or _unprintable(value)):
            out.append(InputError(f"environment variable {name} holds non-ASCII or control characters, which an "
                                  "HTTP header cannot carry (value not shown): set it to the key as issued",
                                  file=str(cfg.source), field=key))
    return out


def embedder_path_problem(cfg: Any) -> InputError | None:
    """``embedder.model`` naming a path that exists but is not a sentence-transformers model folder: a file, or a
    folder whose ``config.json`` is missing or not JSON (the library fails with a traceback)."""
    model = (cfg.embedder or {}).get("model")
    if not isinstance(model, str) or model.startswith("models:/") or not Path(model).exists():
        return None
    path = Path(model)
    where = {"file": str(cfg.source), "field": "embedder.model"}
    if not path.is_dir():
        return InputError(f"{model} is a file; expected a sentence-transformers model folder (or a model name)",
                          **where)
    try:
        ok = isinstance(json.loads((path / "config.json").read_text(encoding="utf-8")), dict)
    except (OSError, UnicodeDecodeError, ValueError):
        ok = False
    if not ok:
        return InputError(f"{model} is not a sentence-transformers model folder (no readable config.json)", **where)
    return None
