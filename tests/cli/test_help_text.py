"""The command line's help: no type placeholders (typer's ``<str>``, ``<bool>``, ``<path>``) in any
command's help, and a mistyped pipeline or graph name gets a "did you mean"."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from hublab.cli import app
from hublab.config import settings
from hublab.errors import InputError


def _commands() -> list[list[str]]:
    root = typer.main.get_command(app)
    out: list[list[str]] = []

    def walk(cmd, path: list[str]) -> None:  # typer vendors its own click: groups are told by their commands
        out.append(path)
        if getattr(cmd, "commands", None):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])

    walk(root, [])
    return out


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p) or "hublab")
def test_help_shows_no_type_placeholders(path: list[str]):
    # COLUMNS only: typer reads TERMINAL_WIDTH once, when typer.rich_utils is first imported, so setting it here
    # fixed every later help in the same worker at 120 columns (a test asking for 250 then saw its rows cut)
    res = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    assert not re.search(r"<(str|bool|path|int|float|list\[[a-z]+\])", res.output), res.output


def test_a_mistyped_pipeline_is_answered_with_the_closest_name():
    with pytest.raises(InputError, match=r"did you mean 'hublink_local'\?"):
        settings().pipeline_file("hublnk_local")


def test_version_prints_the_packages_version():
    import hublab

    out = CliRunner().invoke(app, ["--version"])
    assert out.exit_code == 0 and out.output.strip() == f"hublab {hublab.__version__}"


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p) or "hublab")
def test_no_help_text_names_an_issue(path: list[str]):
    """Help is for the person at the terminal: what an option does, never which issue brought it."""
    out = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert out.exit_code == 0 and not re.search(r"issue ?#?\d+", out.output, re.IGNORECASE), out.output
