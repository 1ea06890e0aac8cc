"""docs/architecture.md stays true and whole: every module it names exists, every ``module.py::Name`` is defined
there, every module file of ``src/hublab`` is named in it, and every package (a folder, with or without
``__init__.py``) and top-level module appears in its layer diagram (issue #32: the doc had claimed a module read
what it never saw)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "hublab"
DOC = ROOT / "docs" / "architecture.md"
REF = re.compile(r"`(?:src/hublab/)?([a-z_][a-z0-9_]*(?:/[a-z_][a-z0-9_]*)*\.py)(?:::([A-Za-z_][A-Za-z0-9_.]*))?`")


def _module(rel: str, src: Path = SRC) -> Path | None:
    """``experiment/request.py`` or ``comparison/tables.py`` (a path below some package) → the file, if one."""
    direct = src / rel
    if direct.is_file():
        return direct
    found = sorted(p for p in src.rglob(Path(rel).name) if p.as_posix().endswith("/" + rel))
    return found[0] if len(found) == 1 else None


def _unnamed_modules(src: Path, doc: str) -> list[str]:
    """The module files below ``src`` (every ``.py`` but a package's ``__init__.py``, in any folder, with or without
    ``__init__.py``) that no reference in ``doc`` resolves to."""
    named = {_module(rel, src) for rel, _ in REF.findall(doc)} - {None}
    return sorted(p.relative_to(src).as_posix() for p in src.rglob("*.py")
                  if p.name != "__init__.py" and "__pycache__" not in p.parts and p not in named)


def _missing_from_diagram(src: Path, doc: str) -> list[str]:
    """The packages (every folder, with or without ``__init__.py``) and top-level modules of ``src`` that the doc's
    first fenced block, the layer diagram, does not name."""
    words = set(re.findall(r"[a-z_][a-z0-9_]*", doc.split("```")[1]))
    units = {p.name.removesuffix(".py") for p in src.iterdir()
             if (p.is_dir() and p.name != "__pycache__") or (p.suffix == ".py" and p.name != "__init__.py")}
    return sorted(units - words)


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


def test_every_module_is_named():
    """A new module gets its line (``## Every other module``, or where its concept is described)."""
    assert _unnamed_modules(SRC, DOC.read_text()) == []


def test_every_package_and_top_level_module_is_in_the_layer_diagram():
    assert _missing_from_diagram(SRC, DOC.read_text()) == []


def test_an_unnamed_module_or_package_is_caught(tmp_path: Path):
    """Both checks above see a folder without ``__init__.py`` and a top-level module."""
    src = tmp_path / "hublab"
    (src / "known").mkdir(parents=True)
    (src / "known" / "__init__.py").write_text("")
    (src / "known" / "listed.py").write_text("")
    (src / "loose").mkdir()  # a namespace folder: no __init__.py
    (src / "loose" / "deep").mkdir()
    (src / "loose" / "deep" / "unlisted.py").write_text("")
    (src / "toplevel.py").write_text("")
    doc = "```\nknown\n```\n\n- `known/listed.py`: named\n"
    assert _unnamed_modules(src, doc) == ["loose/deep/unlisted.py", "toplevel.py"]
    assert _missing_from_diagram(src, doc) == ["loose", "toplevel"]
    doc = "```\nknown loose toplevel\n```\n\n`known/listed.py` `deep/unlisted.py` `toplevel.py`"
    assert _unnamed_modules(src, doc) == [] and _missing_from_diagram(src, doc) == []


def test_a_wrong_reference_is_caught(tmp_path: Path):
    """The two checks above can fail: a renamed module or class is reported."""
    assert _module("experiment/no_such_module.py") is None
    assert not _defines(SRC / "experiment" / "request.py", "RunRequest.no_such_method")
    assert _defines(SRC / "experiment" / "request.py", "RunRequest.description")
