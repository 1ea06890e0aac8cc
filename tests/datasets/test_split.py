"""The selection/report split of a fair comparison: no question both selected and reported, duplicates together,
the same folds on every machine, stratified by a question-type column."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from hublab.datasets.model import QAPair
from hublab.datasets.split import fixed_split, make_split, read_split, write_split
from hublab.errors import InputError


def _pairs(n: int, types: tuple[str, ...] = ("basic", "counting", "ranking")) -> list[QAPair]:
    return [QAPair(f"q{i:03d}", f"Question number {i}?", "", ["<http://x/s> <http://x/p> <http://x/o> ."],
                   retrieval_operation=types[i % len(types)]) for i in range(n)]


def test_below_a_hundred_questions_every_question_is_reported_once_by_five_folds():
    pairs = _pairs(24)
    split = make_split(pairs, seed=0)
    assert split.strategy == "k-fold" and len(split.folds) == 5
    reported = [u for f in split.folds for u in f.report]
    assert sorted(reported) == sorted(p.uid for p in pairs)  # each exactly once
    for f in split.folds:
        assert not set(f.select) & set(f.report)
        assert set(f.select) | set(f.report) == {p.uid for p in pairs}
        assert len(f.report) in (4, 5)


def test_from_a_hundred_questions_one_seeded_split_keeps_about_a_third_for_selection():
    split = make_split(_pairs(150), seed=3)
    assert split.strategy == "holdout" and len(split.folds) == 1
    f = split.folds[0]
    assert len(f.select) == 45 and len(f.report) == 105 and not set(f.select) & set(f.report)


def test_the_split_is_the_same_for_the_same_seed_and_other_for_another():
    a, b, c = make_split(_pairs(30), seed=1), make_split(_pairs(30), seed=1), make_split(_pairs(30), seed=2)
    assert a.folds == b.folds
    assert a.folds != c.folds


def test_folds_are_stratified_by_the_question_type_column():
    pairs = _pairs(30)
    split = make_split(pairs, seed=0)
    assert split.stratified_by == "retrieval_operation"
    kind = {p.uid: p.retrieval_operation for p in pairs}
    for f in split.folds:
        assert Counter(kind[u] for u in f.report) == {"basic": 2, "counting": 2, "ranking": 2}


def test_a_question_asked_twice_under_two_uids_is_never_on_both_sides():
    pairs = _pairs(20)
    pairs.append(QAPair("dup", "  question NUMBER 3? ", "", pairs[3].golden_triples, retrieval_operation="basic"))
    for split in (make_split(pairs, seed=s) for s in range(5)):
        for f in split.folds:
            assert ("q003" in f.report) == ("dup" in f.report)


def test_rows_sharing_a_uid_fall_on_one_side_and_too_few_questions_are_refused():
    with pytest.raises(InputError, match="too few for 5-fold"):
        make_split(_pairs(6), seed=0)
    pairs = _pairs(12)
    pairs[1].uid = "q000"  # the thesis's CSV gives one uid to two rows
    for f in make_split(pairs, seed=0, folds=3).folds:
        assert f.select.count("q000") + f.report.count("q000") == 1
    with pytest.raises(InputError, match="no retrieval_operation"):
        make_split([*_pairs(10), QAPair("x", "other?", "", ["<a:b> <a:c> <a:d> ."])], stratify="retrieval_operation")


def test_a_fixed_selection_set_reports_every_other_question(tmp_path):
    pairs = _pairs(20)
    split = fixed_split(pairs, pairs[:5])
    assert split.strategy == "fixed"
    assert split.folds[0].select == [p.uid for p in pairs[:5]]
    assert len(split.folds[0].report) == 15


def test_split_json_is_a_list_of_folds_and_reads_back(tmp_path):
    split = make_split(_pairs(25), seed=0)
    path = write_split(split, tmp_path / "split.json")
    data = json.loads(path.read_text())
    assert isinstance(data, list) and len(data) == 5 and set(data[0]) == {"select", "report"}
    assert read_split(path) == split.folds
    (tmp_path / "bad.json").write_text('{"select": []}')
    with pytest.raises(InputError, match="expected a list"):
        read_split(tmp_path / "bad.json")
