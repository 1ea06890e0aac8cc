"""Selection and report questions for a fair comparison on any dataset: a seeded, recorded split.

Parameters chosen on a question must never be scored on it. Below :data:`KFOLD_BELOW` questions one split leaves
too few on either side, so every question is reported once by k-fold cross-validation (each fold's configuration
is tuned on the other folds' questions); from it on, one seeded split keeps :data:`SELECT_SHARE` of the questions
for selection. Questions with the same wording (a dataset may hold one twice under two uids) always fall on the
same side, so a duplicate is never both selected and reported. With a question-type column the folds are
stratified by it: each fold holds every type in about its share.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hublab.atomic import write_text_atomic
from hublab.datasets.model import QAPair
from hublab.errors import InputError

#: below this many questions: k-fold cross-validation; from it on: one seeded split
KFOLD_BELOW = 100
#: folds of the cross-validation
DEFAULT_FOLDS = 5
#: share of the questions kept for selection by a single split (the thesis's 44 of 170 is about a quarter)
SELECT_SHARE = 0.3
#: question-type columns a dataset may have, in the order they are preferred for stratification
TYPE_FIELDS = ("retrieval_operation", "use_case", "answer_type")
#: the fewest questions a side may hold: a study and a bootstrap interval need a few
MIN_SIDE = 2


@dataclass(frozen=True)
class Fold:
    """One fold: the uids the configuration is chosen on, and the uids it is scored on."""

    select: list[str]
    report: list[str]

    def to_dict(self) -> dict[str, list[str]]:
        return {"select": list(self.select), "report": list(self.report)}


@dataclass(frozen=True)
class Split:
    """The folds of one comparison and how they were drawn (``split.json`` holds the folds; the rest is said in
    the comparison's caption)."""

    folds: list[Fold]
    strategy: str  # "k-fold" | "holdout" | "fixed"
    seed: int
    stratified_by: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def n_questions(self) -> int:
        """Distinct uids (a uid the dataset gives to two rows counts once here; its rows are run apart)."""
        return len({u for f in self.folds for u in (*f.select, *f.report)})

    def describe(self) -> str:
        """One sentence: how the questions were split and how many each number rests on."""
        n_rep = len({u for f in self.folds for u in f.report})
        if self.strategy == "k-fold":
            sizes = ", ".join(f"{len(f.select)}/{len(f.report)}" for f in self.folds)
            text = (f"{len(self.folds)}-fold cross-validation over {self.n_questions} questions (seed {self.seed}; "
                    f"selected/reported per fold: {sizes}): every question is reported once, scored by the "
                    f"configuration tuned on the other folds; the pooled rows rest on {n_rep} questions")
        elif self.strategy == "holdout":
            f = self.folds[0]
            text = (f"one seeded split (seed {self.seed}): {len(f.select)} questions select the parameters, the "
                    f"other {len(f.report)} are reported")
        else:
            f = self.folds[0]
            text = (f"a fixed selection set: {len(f.select)} questions select the parameters, {len(f.report)} are "
                    "reported")
        if self.stratified_by:
            text += f"; stratified by {self.stratified_by}"
        return text + "."


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def type_field(pairs: list[QAPair], wanted: str | None = None) -> str | None:
    """The question-type column to stratify by: ``wanted`` (must be filled on every row), else the first of
    :data:`TYPE_FIELDS` that every row fills and that takes at least two values, else None."""
    if wanted is not None:
        if wanted not in QAPair.__dataclass_fields__:
            raise InputError(f"unknown column {wanted!r}; a dataset's question-type columns are {list(TYPE_FIELDS)}",
                             field="--stratify")
        empty = [p.uid for p in pairs if getattr(p, wanted) in (None, "")]
        if empty:
            raise InputError(f"{len(empty)} question(s) have no {wanted} (first: {empty[0]})", field="--stratify")
        return wanted
    for name in TYPE_FIELDS:
        values = [getattr(p, name) for p in pairs]
        if all(v not in (None, "") for v in values) and len(set(map(str, values))) >= 2:
            return name
    return None


def _groups(pairs: list[QAPair]) -> list[list[str]]:
    """Distinct uids grouped so that rows sharing a uid or a wording travel together (the thesis's CSV gives one
    uid to two rows, and holds one question twice under two uids), in first-seen order."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for p in pairs:
        a, b = root("u:" + p.uid), root("t:" + _norm(p.question))
        if a != b:
            parent[b] = a
    groups: dict[str, list[str]] = {}
    for p in pairs:
        members = groups.setdefault(root("u:" + p.uid), [])
        if p.uid not in members:
            members.append(p.uid)
    return list(groups.values())


def make_split(pairs: list[QAPair], *, seed: int = 0, folds: int | None = None, stratify: str | None = None,
               select_share: float = SELECT_SHARE) -> Split:
    """Split ``pairs`` into selection and report questions.

    Args:
        pairs: the dataset's questions (rows sharing a uid or a wording fall on the same side).
        seed: the shuffle's seed; the same seed and questions give the same split on every machine.
        folds: k of a k-fold cross-validation; None picks it: :data:`DEFAULT_FOLDS` below :data:`KFOLD_BELOW`
            questions, else one holdout split with ``select_share`` of the questions for selection. 1 forces the
            holdout split.
        stratify: the question-type column (None: the first of :data:`TYPE_FIELDS` the dataset fills).
        select_share: the holdout split's selection share.

    Returns:
        The split; each question appears in exactly one report side per k-fold, never on both sides of a fold.

    Raises:
        InputError: too few questions for the folds, or an unusable column.
    """
    if folds is not None and (isinstance(folds, bool) or folds < 1):
        raise InputError(f"expected at least 1 fold, got {folds!r}", field="--folds")
    column = type_field(pairs, stratify)
    groups = _groups(pairs)
    kind = {p.uid: str(getattr(p, column)) for p in reversed(pairs)} if column else {}  # a uid's first row
    k = folds if folds is not None else (DEFAULT_FOLDS if len(pairs) < KFOLD_BELOW else 1)
    if k == 1:
        return _holdout(groups, kind, seed, column, select_share)
    if len(groups) < k * MIN_SIDE:
        raise InputError(f"{len(groups)} distinct questions are too few for {k}-fold cross-validation (each fold "
                         f"needs at least {MIN_SIDE} reported questions)", field="--folds")
    assignment = _assign(groups, kind, k, seed)
    out = []
    for i in range(k):
        report = sorted(u for g, f in zip(groups, assignment, strict=True) if f == i for u in g)
        select = sorted(u for g, f in zip(groups, assignment, strict=True) if f != i for u in g)
        out.append(Fold(select, report))
    return Split(out, "k-fold", seed, column)


def _assign(groups: list[list[str]], kind: dict[str, str], k: int, seed: int) -> list[int]:
    """A fold per group: shuffled (seeded) within each type, then dealt round-robin, so each fold holds about its
    share of every type and the fold sizes differ by at most one group per type."""
    rng = random.Random(seed)
    by_type: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        by_type.setdefault(kind.get(g[0], ""), []).append(i)
    assignment = [0] * len(groups)
    offset = 0
    for t in sorted(by_type):  # a stable order of types: the same folds in every process
        members = by_type[t]
        rng.shuffle(members)
        for j, gi in enumerate(members):
            assignment[gi] = (offset + j) % k
        offset = (offset + len(members)) % k  # the next type starts where this one stopped: balanced sizes
    return assignment


def _holdout(groups: list[list[str]], kind: dict[str, str], seed: int, column: str | None,
             share: float) -> Split:
    if not 0 < share < 1:
        raise InputError(f"the selection share must lie between 0 and 1, got {share!r}", field="select_share")
    rng = random.Random(seed)
    by_type: dict[str, list[list[str]]] = {}
    for g in groups:
        by_type.setdefault(kind.get(g[0], ""), []).append(g)
    select: list[str] = []
    report: list[str] = []
    for t in sorted(by_type):
        members = by_type[t]
        rng.shuffle(members)
        n_sel = round(len(members) * share)
        for j, g in enumerate(members):
            (select if j < n_sel else report).extend(g)
    if len(select) < MIN_SIDE or len(report) < MIN_SIDE:
        raise InputError(f"{len(select)} selection and {len(report)} report questions: too few on one side",
                         field="--dataset")
    return Split([Fold(sorted(select), sorted(report))], "holdout", seed, column)


def fixed_split(pairs: list[QAPair], selection: list[QAPair]) -> Split:
    """A given selection set (the thesis's 44 reduced-GV1 questions) and every other question reported: a
    question whose uid or wording is in the selection set is never reported."""
    uids = {p.uid for p in selection}
    texts = {_norm(p.question) for p in selection}
    select = sorted(p.uid for p in pairs if p.uid in uids or _norm(p.question) in texts)
    report = sorted(p.uid for p in pairs if p.uid not in set(select))
    if not select:
        raise InputError("no question of the dataset is in the selection set", field="--selection")
    if len(report) < MIN_SIDE:
        raise InputError(f"only {len(report)} question(s) outside the selection set", field="--selection")
    return Split([Fold(select, report)], "fixed", 0)


def write_split(split: Split, path: Path) -> Path:
    """``split.json``: the list of folds, each ``{"select": [uids], "report": [uids]}`` (a single split is a list
    of one). Written atomically."""
    write_text_atomic(path, json.dumps([f.to_dict() for f in split.folds], indent=1) + "\n")
    return path


def read_split(path: Path) -> list[Fold]:
    """The folds of a ``split.json``; a located InputError for anything else."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable split file: {exc}", file=str(path)) from None
    if not isinstance(data, list) or not all(isinstance(f, dict) and set(f) == {"select", "report"} for f in data):
        raise InputError('expected a list of {"select": [uids], "report": [uids]}', file=str(path))
    return [Fold(list(f["select"]), list(f["report"])) for f in data]


def subset(pairs: list[QAPair], uids: list[str]) -> list[QAPair]:
    """The questions with these uids, in the dataset's order; their source rows dropped (a fold's file has its
    own rows)."""
    from dataclasses import replace

    wanted = set(uids)
    return [replace(p, row=None) for p in pairs if p.uid in wanted]
