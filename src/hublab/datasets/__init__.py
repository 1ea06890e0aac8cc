"""KGQA datasets: the thesis CSVs, golden-triple parsing and remapping onto rebuilt graphs."""
