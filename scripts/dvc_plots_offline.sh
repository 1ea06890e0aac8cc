#!/usr/bin/env bash
# `dvc plots show` offline: DVC's HTML loads Vega, Vega-Lite and Vega-Embed from a CDN, so with no network its
# charts are a blank page. This installs DVC's own versions of the three from the npm registry (.cache/vega), writes
# an HTML template with them inlined (.cache/dvc-plots/offline.html: the page is self-contained, it can be mailed
# or opened anywhere) and makes it this checkout's template (`dvc config --local plots.html_template`).
# scripts/setup.sh runs it; without npm it says so and leaves the CDN page (under CI=true that is a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
# the versions dvc-render's Vega renderer names (dvc_render/vega.py); vega-lite 5.2.0 declares vega ^5.21 as a peer, DVC pairs
# it with 5.20.2 all the same: --legacy-peer-deps keeps DVC's pairing
PKGS=(vega@5.20.2 vega-lite@5.2.0 vega-embed@6.18.2)
if ! command -v npm >/dev/null; then
  echo "dvc plots: npm not found, so \`dvc plots show\` loads Vega from a CDN (needs a network)" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 0
fi
mkdir -p .cache/vega .cache/dvc-plots
npm install --prefix .cache/vega --no-audit --no-fund --no-save --legacy-peer-deps --loglevel=error "${PKGS[@]}" >&2
.venv/bin/python - <<'PY'
from pathlib import Path

mods = Path(".cache/vega/node_modules")
scripts = "\n".join(
    f"<script>/* {name} (npm) */\n{(mods / name / 'build' / f'{name}.min.js').read_text(encoding='utf8')}\n</script>"
    for name in ("vega", "vega-lite", "vega-embed"))
page = f"""<!DOCTYPE html>
<html>
<head>
    {{refresh_tag}}
    <title>DVC Plot (offline)</title>
    {scripts}
    <style>
        table {{ border-spacing: 15px; }}
        img {{ max-width: 100%; }}
    </style>
</head>
<body>
    {{plot_divs}}
</body>
</html>"""
out = Path(".cache/dvc-plots/offline.html")
out.write_text(page, encoding="utf8")
print(f"dvc plots: offline template {out} ({out.stat().st_size // 1024} KiB)")
PY
.venv/bin/python -m dvc config --local plots.html_template "$PWD/.cache/dvc-plots/offline.html"
