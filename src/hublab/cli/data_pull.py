"""``hublab data pull``: ``dvc pull`` that restores what the remote has and names what it does not.

Why: plain ``dvc pull`` on a clone fails as a whole ("Checkout failed", exit 1) as soon as one output of dvc.lock
was never pushed (an index built in another checkout only), and a relative remote URL points at nothing from a
clone elsewhere. Here the pull keeps going past missing outputs (``--allow-missing``), then lists each output of
dvc.lock that is still absent with the stage that builds it; a remote that does not exist is one error line with
the command that sets it (``scripts/setup.sh`` sets a per-user absolute one: docs/data-pipeline.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer

from hublab.cli.app import data_app
from hublab.errors import HubLabError


def _dvc(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root, capture_output=True, text=True)


def remote_url(root: Path) -> tuple[str, Path | None]:
    """(remote name, its folder when it is a local path; None for a cloud URL), as DVC resolves it here."""
    name = _dvc(root, "config", "core.remote").stdout.strip()
    if not name:
        raise HubLabError("no default DVC remote is set: `dvc remote add -d <name> <url>`, or run "
                          "`bash scripts/setup.sh`, which sets a per-user local one")
    url = _dvc(root, "config", f"remote.{name}.url").stdout.strip()
    if "://" in url and not url.startswith("file://"):
        return name, None
    path = Path(url.removeprefix("file://")).expanduser()
    if not path.is_absolute():  # relative to the config file that sets it: .dvc/config or .dvc/config.local
        path = root / ".dvc" / path
    return name, path.resolve()


def missing_outputs(root: Path) -> list[tuple[str, str]]:
    """(output path, stage) of every dvc.lock output absent from the workspace."""
    import yaml

    lock = root / "dvc.lock"
    stages = (yaml.safe_load(lock.read_text()) or {}).get("stages", {}) if lock.exists() else {}
    out: list[tuple[str, str]] = []
    for stage, entry in sorted(stages.items()):
        for o in entry.get("outs") or []:
            if not (root / o["path"]).exists():
                out.append((o["path"], stage))
    return out


@data_app.command("pull")
def pull_cmd(
    targets: list[str] = typer.Argument(None, help="stages or outputs to pull (default: every output of dvc.lock)"),
) -> None:
    """Fetch the data and indices from the DVC remote; outputs the remote lacks are listed, not fatal."""
    from hublab.config import project_root

    root = project_root()
    name, folder = remote_url(root)
    if folder is not None and not folder.is_dir():
        raise HubLabError(f"DVC remote {name!r} is {folder}, which does not exist: push to it from the checkout "
                          f"that built the data (`dvc push`), or point it elsewhere with "
                          f"`dvc remote modify --local {name} url <path>`")
    res = _dvc(root, "pull", "--allow-missing", *(targets or []))
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
        raise HubLabError(f"dvc pull from {name!r} failed: " + " | ".join(tail))
    absent = missing_outputs(root)
    where = folder or name
    if targets:
        absent = [(p, s) for p, s in absent if p in targets or s in targets]
    for path, stage in absent:
        typer.echo(f"not on the remote ({where}): {path} — never pushed; build it with `dvc repro {stage}`",
                   err=True)
    got = res.stdout.strip().splitlines()[-1:] or ["nothing to pull"]
    typer.echo(f"pulled from {where}: {got[0]}; {len(absent)} output(s) not on the remote")
