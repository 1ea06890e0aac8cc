"""``hublab`` command line. Commands live in :mod:`hublab.commands` (one module per area) and import
heavy libraries lazily so ``hublab --help`` stays fast."""

from __future__ import annotations

import sys

from hublab.env import apply_offline_defaults

apply_offline_defaults()

from hublab.cliapp import app  # noqa: E402
from hublab.commands import data as _data  # noqa: E402,F401
from hublab.commands import evaluate as _evaluate  # noqa: E402,F401
from hublab.commands import graph as _graph  # noqa: E402,F401
from hublab.commands import retrieve as _retrieve  # noqa: E402,F401
from hublab.commands import tune as _tune  # noqa: E402,F401
from hublab.errors import HubLabError  # noqa: E402


def main() -> None:
    try:
        app()
    except HubLabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc


if __name__ == "__main__":
    main()
