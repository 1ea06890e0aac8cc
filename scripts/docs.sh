#!/usr/bin/env bash
# Build the documentation site (MkDocs Material + mkdocstrings) into .cache/site, strictly: a broken link, a missing
# page or an API reference that does not resolve fails the build. The command-line reference is generated from the
# typer app first (docs/reference/cli.md, git-ignored), so it is never out of date. CI runs this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" NO_MKDOCS_2_WARNING=1
.venv/bin/typer hublab.cli utils docs --name hublab --title "Command line" --output docs/reference/cli.md >/dev/null
# the comparison chart lives in reports/ (a DVC output): the site shows the committed one
mkdir -p docs/img && cp reports/summary/methods.png docs/img/methods.png
.venv/bin/mkdocs build --strict 2> .cache/mkdocs.log || { grep -v "^INFO" .cache/mkdocs.log >&2; exit 1; }
echo "docs: built .cache/site (mkdocs --strict)"
