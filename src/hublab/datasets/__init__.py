"""KGQA datasets: the thesis CSVs, golden-triple parsing and remapping onto rebuilt graphs."""

#: the submodules, from the thesis CSVs to the remapped JSONL, and the STaRK adapter; importing the package
#: loads none of them
__all__ = ["build", "catalog", "id_hints", "kgqa_csv", "model", "remap", "split", "stark"]
