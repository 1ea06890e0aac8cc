"""``--experiment`` on ``report compare`` and ``tune`` (issue #21 item 7) is a name, checked before any work."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hublab.cli import app
from hublab.errors import InputError


@pytest.mark.parametrize("args", [
    ["report", "compare", "--experiment", "../elsewhere"],
    ["report", "compare", "--graph", "gv3_orkg", "--experiment", "a/../b"],
    ["tune", "pipelines/bm25.yaml", "--study", "s", "--experiment", "../elsewhere"],
])
def test_a_path_as_experiment_is_refused_before_any_work(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be created: no mlruns, no outputs, no reports
    res = CliRunner().invoke(app, args)
    assert isinstance(res.exception, InputError), res.output
    assert res.exception.field == "--experiment"
    assert not any(tmp_path.iterdir())


def test_both_commands_document_the_option():
    for cmd in (["report", "compare", "--help"], ["tune", "--help"]):
        res = CliRunner().invoke(app, cmd, env={"COLUMNS": "200"})
        assert res.exit_code == 0 and "--experiment" in res.output
