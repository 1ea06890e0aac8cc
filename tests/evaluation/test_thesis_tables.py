"""The thesis's result tables, read by one module: the shipped files' numbers, HubLink's GV1 from the final
comparison, bad cells named by file, line and column, and a changed file read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hublab.errors import InputError
from hublab.evaluation import names, thesis_tables


def test_shipped_tables(shared: Path):
    base = shared / "reference" / "thesis_results"
    gv3 = thesis_tables.on_graph(base, "gv3_orkg")  # the ORKG export is the thesis's GV3
    assert sorted(gv3) == ["DiFaR", "FiDeLiS", "HubLink", "Mindmap"]
    assert gv3["HubLink"] == {names.RECALL: 0.812, names.PRECISION: 0.35, names.F1: 0.423, names.MAP_AT_10: 0.408}
    assert thesis_tables.on_graph(base, "gv3") == gv3 and thesis_tables.on_graph(base, "reduced_gv1") == {}
    hub_gv1 = thesis_tables.by_method(base)["HubLink"]["GV1"]  # the final comparison's HubLink (Traverse)
    assert hub_gv1[names.HITS_AT_10] == 0.513 and hub_gv1[names.MAP_AT_10] == 0.298
    assert hub_gv1["faithfulness"] == 0.445
    assert "faithfulness" not in thesis_tables.final_comparison(base)["HubLink (Fast)"]  # "none" there: left out
    assert thesis_tables.by_method(base)["DiFaR"]["GV1"][names.MAP_AT_10] == 0.15  # the variant table


def test_bad_cell_names_file_line_and_column(tmp_path: Path):
    path = tmp_path / thesis_tables.GRAPH_VARIANTS_CSV
    path.write_text("Config,F1,MAP@10,Precision,Recall\nHubLink (GV1),0.3,0.2,0.1,0.7\nDiFaR (GV1),0.1,n/a,0.1,0.3\n")
    with pytest.raises(InputError) as err:
        thesis_tables.graph_variants(tmp_path)
    assert (err.value.file, err.value.line, err.value.field) == (str(path), 3, "MAP@10")
    path.write_text("Config,F1,MAP@10,Precision,Recall\nHubLink,0.3,0.2,0.1,0.7\n")
    with pytest.raises(InputError, match="line 2, field 'Config'"):
        thesis_tables.graph_variants(tmp_path)


def test_read_once_per_version_and_callers_get_copies(tmp_path: Path):
    path = tmp_path / thesis_tables.GRAPH_VARIANTS_CSV
    path.write_text("Config,F1,MAP@10,Precision,Recall\nHubLink (GV1),0.3,0.2,0.1,0.7\n")
    first = thesis_tables.graph_variants(tmp_path)
    first["HubLink"]["GV1"][names.MAP_AT_10] = 9.0  # a caller's edit stays with the caller
    assert thesis_tables.on_graph(tmp_path, "gv1")["HubLink"][names.MAP_AT_10] == 0.2
    path.write_text("Config,F1,MAP@10,Precision,Recall\nHubLink (GV1),0.3,0.25,0.1,0.7\n")
    os.utime(path, ns=(1, 1))  # a new modification time: the file is read again
    assert thesis_tables.on_graph(tmp_path, "gv1")["HubLink"][names.MAP_AT_10] == 0.25
    assert thesis_tables.graph_variants(tmp_path / "missing") == {}
