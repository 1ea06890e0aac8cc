"""``python -m hublab.cli``: what DVC stages call."""

from hublab.cli import main

main()
