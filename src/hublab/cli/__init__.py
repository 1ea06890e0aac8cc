"""``hublab`` command line. Each module in :mod:`hublab.cli` attaches its commands to the typer
apps in :mod:`hublab.cli.app`; modules import heavy libraries lazily so ``hublab --help`` stays fast."""

from __future__ import annotations

import importlib
import pkgutil
import sys

from hublab.env import apply_offline_defaults

apply_offline_defaults()

from hublab.cli.app import app  # noqa: E402
from hublab.errors import HubLabError  # noqa: E402

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _mod not in ("app", "__main__"):
        importlib.import_module(f"hublab.cli.{_mod}")


def main() -> None:
    try:
        app()
    except HubLabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc


if __name__ == "__main__":
    main()
