"""``params.yaml`` against its schema (issue #45, class 7): unknown keys, keys given twice and values of the wrong type
are refused with file, line and key, all at once, by every command; environment references in paths are expanded,
and an unset one is refused. The committed params.yaml passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from hublab.config import _load_params
from hublab.errors import InputError
from hublab.params_schema import load_params

REPO = Path(__file__).resolve().parents[2]


def _params(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "params.yaml"
    p.write_text(text)
    return p


def test_the_committed_params_yaml_passes():
    data = load_params(REPO / "params.yaml")
    assert data["paths"]["indices"] == "models" and data["fair"]["bound"] == 20


@pytest.mark.parametrize(("text", "field", "line", "said"), [
    ("paths: {indices: models}\ntrackng: {experiment: x}\n", "trackng", 2, "unknown key 'trackng'"),
    ("tracking:\n  experiment: a\n  expriment: b\n", "tracking.expriment", 3, "unknown key 'expriment'"),
    ("tracking:\n  experiment: a\n  experiment: b\n", "tracking.experiment", 3, "given twice"),
    ("tracking: {experiment: 123}\n", "tracking.experiment", 1, "string"),
    ("paths:\n  indices: [1, 2]\n", "paths.indices", 2, "string"),
    ("fair: {n_trials: forty}\n", "fair.n_trials", 1, "integer"),
    ("evaluate:\n  runs:\n    - {pipeline: bm25, graph: gv1}\n", "evaluate.runs[0].dataset", 3, "required"),
])
def test_a_bad_params_yaml_is_refused_with_file_line_and_key(tmp_path: Path, text, field, line, said):
    p = _params(tmp_path, text)
    with pytest.raises(InputError) as got:
        load_params(p)
    errors = getattr(got.value, "errors", [got.value])
    (e,) = [e for e in errors if e.field == field]
    assert e.file == str(p) and e.line == line and said in str(e), str(e)


def test_every_problem_is_said_at_once(tmp_path: Path):
    p = _params(tmp_path, "trackng: {}\nfair: {n_trials: x, seed: y}\n")
    with pytest.raises(InputError) as got:
        load_params(p)
    assert {e.field for e in got.value.errors} == {"trackng", "fair.n_trials", "fair.seed"}


def test_paths_expand_the_environment_and_refuse_an_unset_variable(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HUBLAB_TEST_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.delenv("HUBLAB_TEST_UNSET", raising=False)
    data = load_params(_params(tmp_path, "paths: {indices: '${HUBLAB_TEST_DIR}/models', cache: ~/.hl}\n"))
    assert data["paths"]["indices"] == f"{tmp_path}/elsewhere/models"
    assert data["paths"]["cache"] == str(Path.home() / ".hl")
    with pytest.raises(InputError, match="HUBLAB_TEST_UNSET, which are not set") as got:
        load_params(_params(tmp_path, "paths:\n  indices: $HUBLAB_TEST_UNSET/x\n"))
    assert got.value.line == 1 or got.value.field == "paths"


def test_a_command_refuses_it_in_one_located_line(tmp_path: Path, monkeypatch):
    from conftest import invoke_cli

    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text() + "\ntrackng: {experiment: x}\n")
    monkeypatch.setenv("HUBLAB_ROOT", str(tmp_path))
    _load_params.cache_clear()
    try:
        code, out, err = invoke_cli(["list"])
    finally:
        _load_params.cache_clear()
    assert code == 2 and "Traceback" not in err, out + err
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert "params.yaml" in line and "trackng" in line and "unknown key" in line, line


def test_the_docs_name_every_key_of_the_schema():
    from pydantic import BaseModel

    from hublab.params_schema import Params

    doc = (REPO / "docs" / "configuration.md").read_text()
    seen: set[str] = set()

    def walk(model: type[BaseModel]) -> None:
        for name, f in model.model_fields.items():
            key = f.alias or name
            assert f"`{key}`" in doc, f"docs/configuration.md does not name params.yaml's key {key!r}"
            for arg in getattr(f.annotation, "__args__", ()) + (f.annotation,):
                inner = getattr(arg, "__args__", ()) + (arg,)
                for t in inner:
                    if isinstance(t, type) and issubclass(t, BaseModel) and t not in seen:
                        seen.add(t)
                        walk(t)

    walk(Params)
    assert len(seen) > 10
