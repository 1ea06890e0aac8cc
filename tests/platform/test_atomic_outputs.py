"""Every file HubLab writes is written atomically (``hublab.atomic``): a process killed mid-write leaves the old file
or the new one, never a cut one that a later run reads as valid. The walk finds ``Path.write_text``/``write_bytes``
calls in ``src/hublab``; a call on a temporary path from ``atomic_path`` (a name ending in ``tmp``) is the atomic
form, and the synthetic STaRK builder writes a throwaway fixture folder, never an output."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "hublab"
#: files allowed plain writes, with the reason
ALLOWED = {"atomic.py": "the atomic writers themselves",
           "datasets/stark/synthetic.py": "builds a throwaway synthetic dataset folder for tests and demos"}


def plain_writes(root: Path) -> list[str]:
    """``file:line`` of each ``.write_text(`` / ``.write_bytes(`` call under ``root`` not on a ``*tmp`` name."""
    found = []
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        if rel in ALLOWED:
            continue
        for node in ast.walk(ast.parse(f.read_text(), filename=str(f))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("write_text", "write_bytes")):
                target = node.func.value
                if isinstance(target, ast.Name) and target.id.endswith("tmp"):
                    continue
                found.append(f"{rel}:{node.lineno}")
    return found


def test_every_output_is_written_atomically():
    assert plain_writes(SRC) == []


def test_the_walk_finds_a_plain_write(tmp_path: Path):
    (tmp_path / "m.py").write_text("from pathlib import Path\n\n\ndef f(p):\n    Path(p).write_text('x')\n"
                                   "    with atomic_path(p) as tmp:\n        tmp.write_text('y')\n")
    assert plain_writes(tmp_path) == ["m.py:5"]
