"""The pipeline YAML and the config values it holds: a file that would make parsing unbounded (size, depth, alias
bombs) refused before it is parsed; values its schema accepts but this machine or a KGQA run cannot use
(``evaluation.k``, ``device``, a damaged Milvus Lite index) located by file, line and field."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any

from hublab.errors import InputError

#: the pipeline YAML is read whole and walked several times: a larger file is refused before parsing
MAX_PIPELINE_BYTES = 5 * 1024 * 1024
#: YAML nesting (mappings and sequences inside each other) a pipeline may use
MAX_YAML_DEPTH = 32
#: nodes a pipeline YAML may expand to once its aliases are followed (an alias bomb expands ×9 per level)
MAX_YAML_NODES = 20_000
#: ``evaluation.k``: rank cut-offs beyond this make no sense for a KGQA answer list (and become metric names)
MAX_EVAL_K = 1000


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
                          "(hublab.preflight.files.MAX_PIPELINE_BYTES)", file=src)
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
