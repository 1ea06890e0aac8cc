"""A process stopped by SIGTERM whose cleanup blocks (a database locked by a stopped sibling, a call into a busy
server) exits anyway after ``hublab.signals.GRACE_S``, saying so, with 128 + the signal's number: it must neither
hang nor vanish silently (a tune-all parent that gave up on its jobs first killed them mid-cleanup, unsaid)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

BLOCKED_CLEANUP = """
import sys, time
sys.path.insert(0, sys.argv[1])
from hublab import signals
signals.GRACE_S = 1.0
signals.interrupt_on_termination()
try:
    print("ready", flush=True)
    time.sleep(60)
except signals.Terminated:
    time.sleep(60)  # a cleanup that never ends
"""


def test_a_blocked_cleanup_ends_after_the_grace_saying_so():
    proc = subprocess.Popen([sys.executable, "-c", BLOCKED_CLEANUP, str(SRC)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert time.monotonic() - t0 < 15
    assert "interrupted (SIGTERM): the cleanup did not finish within 1 s; exiting now" in err, err
