"""Headless Chromium for the tests that look at a page as a user would (the MLflow UI, `dvc plots show`'s HTML):
Debian's ``chromium`` (``.ci/run`` installs it), a fresh profile per call, no network of its own."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from support.real_parts import missing

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BUDGET_MS = 15000  # virtual time for a page's scripts to fetch and render


def need_chromium() -> None:
    """Skip (fail under ``CI=true``) when Chromium is missing."""
    if not Path(CHROMIUM).exists():
        missing("chromium", "no `chromium` on PATH and no /usr/bin/chromium (apt-get install -y chromium; .ci/run "
                "installs it before the tests)")


def chromium(url: str, *mode: str, timeout: float = 60, window: str = "1400,1700") -> subprocess.CompletedProcess:
    """Headless Chromium on ``url`` with a fresh profile, no network besides the page's own requests."""
    profile = tempfile.mkdtemp(prefix="hublab-chromium-")
    try:
        args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", f"--user-data-dir={profile}",
                f"--virtual-time-budget={BUDGET_MS}", f"--window-size={window}", *mode, url]
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        assert p.returncode == 0, f"chromium exited {p.returncode}: {p.stderr[-2000:]}"
        return p
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def render(url: str, png: Path, *, window: str = "1400,1700") -> str:
    """Load ``url``, let the SPA fetch and render for ``BUDGET_MS`` of virtual time, save a screenshot to ``png``
    and return the rendered DOM (one Chromium run does both). ``window``: "width,height" in pixels."""
    dom = chromium(url, f"--screenshot={png}", "--dump-dom", window=window).stdout
    assert png.is_file() and png.stat().st_size > 10_000, f"no (or an empty) screenshot at {png}"
    return dom


def visible_text(dom: str) -> str:
    """The DOM's text (tags dropped, entities decoded), whitespace collapsed."""
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S | re.I)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text)))


