"""``dvc plots show`` renders with no network: the set-up's template (scripts/dvc_plots_offline.sh: Vega, Vega-Lite
and Vega-Embed from the npm registry, inlined) replaces DVC's CDN scripts, and the comparison chart is an image plot
(dvc.yaml's top-level ``plots``). Checked in a clone of this checkout, as a user's checkout would be set up, by
headless Chromium (which has no network of its own): the page's Vega charts are drawn and the chart image is shown.

Needs npm (the registry; ``.ci/run``'s machine has it) and Debian's ``chromium``; skips without them, fails under
``CI=true``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support.browser import need_chromium, render
from support.real_parts import missing

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # npm, dvc, a browser


def sh(args: list[str], cwd: Path) -> str:
    res = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "DVC_NO_ANALYTICS": "1"})
    assert res.returncode == 0, f"{' '.join(args)}: {res.stdout[-2000:]}\n{res.stderr[-2000:]}"
    return res.stdout + res.stderr


def test_dvc_plots_show_renders_offline_with_the_comparison_chart(tmp_path: Path):
    need_chromium()
    if shutil.which("npm") is None:
        missing("npm", "scripts/dvc_plots_offline.sh installs Vega from the npm registry")
    clone = tmp_path / "hublab"
    sh(["git", "clone", "-q", str(ROOT), str(clone)], tmp_path)
    for name in ("dvc.yaml", "scripts/dvc_plots_offline.sh"):  # this checkout's versions
        shutil.copy(ROOT / name, clone / name)
    (clone / ".venv").symlink_to(ROOT / ".venv")
    said = sh(["bash", "scripts/dvc_plots_offline.sh"], clone)
    assert "offline template" in said, said
    out = tmp_path / "plots"
    sh([str(ROOT / ".venv" / "bin" / "dvc"), "plots", "show", "-o", str(out)], clone)
    page = (out / "index.html").read_text()
    assert not re.search(r"<script[^>]*\bsrc=[\"']?https?://", page), "the page loads scripts from the network"
    assert 'src="static/' in page and "methods.png" in page, "the comparison chart is not on the page"

    dom = render((out / "index.html").as_uri(), tmp_path / "plots.png")
    assert dom.count('class="marks"') >= 3, "Vega drew no charts (are its scripts loaded?)"  # canvas or svg
    assert "methods.png" in dom
    import matplotlib.image as mpimg

    shot = mpimg.imread(tmp_path / "plots.png")
    assert shot.std() > 0.05, "the screenshot is blank"
