"""Pipeline YAML read strictly: a key given twice in one mapping is an error (PyYAML keeps the last one
silently), and every key's line is remembered so a validation error can say where the bad value is."""

from __future__ import annotations

from typing import Any

import yaml

from hublab.errors import InputError, raise_all


def _walk(node: yaml.Node, prefix: str, lines: dict[str, int], problems: list[InputError], source: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            line = key_node.start_mark.line + 1
            path = f"{prefix}.{key}" if prefix else key
            if key == "<<":  # a merge key: its mapping's keys are this mapping's
                _walk(value_node, prefix, lines, problems, source)
                continue
            if key in seen:
                problems.append(InputError(f"key {key!r} given twice (first at line {seen[key]}); YAML would "
                                           "silently keep the last", file=source, line=line, field=path))
            seen[key] = line
            lines.setdefault(path, line)
            _walk(value_node, path, lines, problems, source)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, f"{prefix}[{i}]", lines, problems, source)


def load_yaml(text: str, *, source: str) -> tuple[Any, dict[str, int]]:
    """(data, {dotted key path: 1-based line}). Every duplicate key is reported (all at once)."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[str, int] = {}
        problems: list[InputError] = []
        if node is not None:
            _walk(node, "", lines, problems, source)
        raise_all(problems)
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return data, lines
