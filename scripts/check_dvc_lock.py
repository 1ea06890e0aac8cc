"""CI check: the committed dvc.lock matches the committed code, pipelines and params.

Why: when code a DVC stage depends on changes without the stage being rerun, every fresh clone re-indexes and
re-evaluates, and the committed reports no longer describe the code. Data dependencies (data/, models/, the
reference files) are not checked: a fresh clone has not built them yet.

Usage: ``.venv/bin/python scripts/check_dvc_lock.py`` (exit 1 listing the stages to rerun; 0 when consistent).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Dependencies that are the project's own text: a change to them means the stage's outputs are stale.
CODE_PREFIXES = ("src/", "pipelines/", "scripts/", "bench/")


def is_code(dep: str) -> bool:
    return dep.startswith(CODE_PREFIXES) or dep in ("params.yaml", "dvc.yaml")


def stale_stages(status: dict, locked: set[str] | None = None) -> dict[str, list[str]]:
    """Stage → its changed code, pipeline or params dependencies, from ``dvc status --json``; only stages recorded
    in ``locked`` (the stages of dvc.lock) when given: a stage that was never run has no committed outputs that
    could contradict the code (``never_run`` lists those)."""
    out: dict[str, list[str]] = {}
    for stage, entries in status.items():
        if locked is not None and stage not in locked:
            continue
        changed: list[str] = []
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            for dep, state in (entry.get("changed deps") or {}).items():
                if is_code(dep):
                    changed.append(f"{dep} ({state})")
            for file, params in (entry.get("changed params") or {}).items():
                changed.append(f"{file}: {', '.join(sorted(params))}" if isinstance(params, dict) else str(file))
        if changed:
            out[stage] = changed
    return out


def locked_stages(lock_file: Path) -> set[str]:
    import yaml

    if not lock_file.exists():
        return set()
    return set((yaml.safe_load(lock_file.read_text()) or {}).get("stages", {}))


def never_run(status: dict, locked: set[str]) -> list[str]:
    return sorted(s for s in status if s not in locked)


def main() -> int:
    dvc = ROOT / ".venv" / "bin" / "dvc"
    proc = subprocess.run([str(dvc) if dvc.exists() else "dvc", "status", "--json"], cwd=ROOT,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"check_dvc_lock: `dvc status` failed:\n{proc.stderr.strip()}", file=sys.stderr)
        return 1
    text = proc.stdout.strip()
    status = json.loads(text[text.index("{"):]) if "{" in text else {}
    locked = locked_stages(ROOT / "dvc.lock")
    for stage in never_run(status, locked):
        print(f"note: stage {stage} has never been run (not in dvc.lock): nothing committed to check", file=sys.stderr)
    stale = stale_stages(status, locked)
    if not stale:
        print("dvc.lock matches the code, pipelines and params")
        return 0
    print("dvc.lock does not match the committed code: rerun these stages and commit dvc.lock with their reports",
          file=sys.stderr)
    for stage, deps in stale.items():
        print(f"  {stage}: {'; '.join(deps)}", file=sys.stderr)
    print(f"  fix: .venv/bin/dvc repro {' '.join(stale)}  (then git add dvc.lock reports && git commit)",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
