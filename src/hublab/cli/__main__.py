"""``python -m hublab.cli`` (what dvc.yaml stages run)."""

from hublab.cli import main

main()
