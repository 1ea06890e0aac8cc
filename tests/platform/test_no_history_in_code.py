"""History belongs in commits: no source file, help text or docs page names the issue that brought a thing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ISSUE = re.compile(r"\bissue[ -]?#\s?\d+|\bpre-issue", re.IGNORECASE)


def test_no_issue_numbers_in_the_package_or_the_docs():
    found = []
    for path in [*sorted((ROOT / "src" / "hublab").rglob("*.py")), *sorted((ROOT / "docs").rglob("*.md")),
                 ROOT / "README.md"]:
        if "reference" in path.parts:  # generated from the help texts (tests/cli/test_help_text.py checks those)
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if ISSUE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert found == [], "\n".join(found)
