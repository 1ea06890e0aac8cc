#!/usr/bin/env bash
# Point this checkout's default DVC remote ("local", .dvc/config) at one absolute folder per user, so that every
# clone on this machine, wherever it lies, pushes to and pulls from the same place: the committed URL is relative
# to the checkout (../hublab-dvc-remote beside it), which a clone elsewhere resolves to a folder that is not there.
# Written to .dvc/config.local (not in git); a URL already set there is kept. scripts/setup.sh runs this.
#   HUBLAB_DVC_REMOTE=<folder or URL>   another place (default: ${XDG_CACHE_HOME:-~/.cache}/hublab/dvc-remote)
set -euo pipefail
cd "$(dirname "$0")/.."
DVC=(.venv/bin/python -m dvc)
if [ -n "$("${DVC[@]}" config --local remote.local.url 2>/dev/null || true)" ]; then
  echo "dvc remote: kept $("${DVC[@]}" config --local remote.local.url) (.dvc/config.local)" >&2
  exit 0
fi
url="${HUBLAB_DVC_REMOTE:-${XDG_CACHE_HOME:-$HOME/.cache}/hublab/dvc-remote}"
case "$url" in
  *://*) ;;
  *) mkdir -p "$url"; url=$(cd "$url" && pwd) ;;
esac
"${DVC[@]}" remote modify --local local url "$url"
echo "dvc remote: local -> $url (.dvc/config.local; HUBLAB_DVC_REMOTE changes it)" >&2
