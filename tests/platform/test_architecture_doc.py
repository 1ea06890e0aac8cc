"""docs/architecture.md stays true: every module it names exists, every ``module.py::Name`` is defined there, and
every package of ``src/hublab`` appears in its layer diagram (issue #32: the doc had claimed a module read what it
never saw)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "hublab"
DOC = ROOT / "docs" / "architecture.md"
REF = re.compile(r"`(?:src/hublab/)?([a-z_]+(?:/[a-z_]+)*\.py)(?:::([A-Za-z_][A-Za-z0-9_.]*))?`")


def _module(rel: str) -> Path | None:
    """``experiment/request.py`` or ``comparison/tables.py`` (a path below some package) → the file, if one."""
    direct = SRC / rel
    if direct.is_file():
        return direct
    found = sorted(p for p in SRC.rglob(Path(rel).name) if p.as_posix().endswith("/" + rel))
    return found[0] if len(found) == 1 else None


def _defines(path: Path, dotted: str) -> bool:
    """``Name`` or ``Class.method`` is defined at the top of ``path`` (class, function or assignment)."""
    body = ast.parse(path.read_text()).body
    for part in dotted.split("."):
        names = {n.name: n for n in body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
        names.update({t.id: n for n in body if isinstance(n, ast.Assign | ast.AnnAssign)
                      for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)})
        if part not in names:
            return False
        body = getattr(names[part], "body", [])
    return True


def test_every_module_and_name_the_doc_cites_exists():
    refs = REF.findall(DOC.read_text())
    assert len(refs) > 20, "the pattern finds the doc's references"
    missing = sorted({rel for rel, _ in refs if (ROOT / rel).is_file() is False and _module(rel) is None})
    assert missing == []
    undefined = sorted({f"{rel}::{name}" for rel, name in refs if name and _module(rel) is not None
                        and not _defines(_module(rel), name)})
    assert undefined == []


def test_every_package_is_in_the_layer_diagram():
    diagram = DOC.read_text().split("```")[1]
    words = set(re.findall(r"[a-z_]+", diagram))
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert sorted(packages - words) == []


def test_a_wrong_reference_is_caught(tmp_path: Path):
    """The two checks above can fail: a renamed module or class is reported."""
    assert _module("experiment/no_such_module.py") is None
    assert not _defines(SRC / "experiment" / "request.py", "RunRequest.no_such_method")
    assert _defines(SRC / "experiment" / "request.py", "RunRequest.description")
