"""Normal CLI output is HubLab's (issue #21 item 7): the command line sets, once at start-up, gRPC's C-core log level
(GOAWAY ``too_many_pings`` and fork-handler notices), Hugging Face's weight-loading bars and Optuna's
ExperimentalWarning off, leaving a user's own setting alone."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from hublab.env import CLI_QUIET_DEFAULTS, quiet_cli

SRC = Path(__file__).resolve().parents[2] / "src"
TRIGGER = ("import optuna._experimental as e, optuna.exceptions as x\n"
           "e.experimental_func('3.0.0')(lambda: 1)()\n"
           "e.warn_experimental_argument('constraints_func')\n")


def test_optuna_experimental_warnings_are_filtered_and_env_defaults_set(monkeypatch):
    import optuna._experimental as e
    from optuna.exceptions import ExperimentalWarning

    for key in CLI_QUIET_DEFAULTS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GRPC_VERBOSITY", "ERROR")  # the user's own choice wins
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        e.experimental_func("3.0.0")(lambda: 1)()
        assert [w for w in seen if issubclass(w.category, ExperimentalWarning)]  # shown without the filter
        seen.clear()
        quiet_cli()
        e.experimental_func("3.0.0")(lambda: 1)()
        e.warn_experimental_argument("constraints_func")
        warnings.warn("an ordinary warning", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["an ordinary warning"]  # only Optuna's experimental notes go
    assert os.environ["GRPC_VERBOSITY"] == "ERROR"
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1" and os.environ["TRANSFORMERS_VERBOSITY"] == "error"


@pytest.mark.slow  # starts Python processes
def test_a_cli_process_prints_no_experimental_warning():
    env = {k: v for k, v in os.environ.items() if k not in CLI_QUIET_DEFAULTS}
    env["PYTHONPATH"] = str(SRC)

    def stderr(code: str) -> str:
        p = subprocess.run([sys.executable, "-W", "default", "-c", code], env=env, capture_output=True, text=True,
                           timeout=120, check=True)
        return p.stderr

    assert "ExperimentalWarning" in stderr(TRIGGER)  # what a bare process prints
    out = stderr("import hublab.cli, os, sys\n" + TRIGGER + "print(os.environ['GRPC_VERBOSITY'], file=sys.stderr)")
    assert "ExperimentalWarning" not in out and out.strip() == "NONE"


def test_processes_a_command_spawns_are_quiet_too(monkeypatch):
    """``tune-all --jobs`` and ``compare --jobs`` run studies in spawned processes, which start without the CLI's
    warning filters: the plotting warnings reach them through PYTHONWARNINGS, the user's own entries kept."""
    import subprocess
    import sys

    from hublab.env import PLOT_WARNING_ENV, set_verbosity

    monkeypatch.setenv("PYTHONWARNINGS", "error::ResourceWarning")
    set_verbosity(False)
    try:
        assert os.environ["PYTHONWARNINGS"].split(",") == ["error::ResourceWarning", *PLOT_WARNING_ENV]
        code = ("import warnings; warnings.warn('optuna.visualization.matplotlib._x.plot_x is experimental'); "
                "warnings.warn('Attempting to set identical low and high ylims makes transformation singular'); "
                "warnings.warn('something else')")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert "something else" in out.stderr and "optuna" not in out.stderr and "ylims" not in out.stderr
        set_verbosity(True)
        assert os.environ["PYTHONWARNINGS"] == "error::ResourceWarning"
    finally:
        set_verbosity(False)
