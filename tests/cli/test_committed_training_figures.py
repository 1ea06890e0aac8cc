"""The train stage's committed record holds figures to 6 significant digits: CPU training's losses move in the 7th
digit between runs, and a committed file must be the same on every machine."""

from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).resolve().parents[2] / "reports" / "train" / "training.json"


def test_the_committed_training_record_has_six_significant_digits():
    from hublab.cli.train import _six_digits

    figures = json.loads(RECORD.read_text())
    floats = {k: v for k, v in figures.items() if isinstance(v, float)}
    assert floats and all(_six_digits(v) == v for v in floats.values()), floats
    assert _six_digits(0.6106910109519958) == _six_digits(0.610690712928772) == 0.610691
