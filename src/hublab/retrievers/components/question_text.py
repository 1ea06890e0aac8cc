"""Question text analysis shared by every LLM-free step: one stop-word list, one quoted-span pattern,
keyword candidates and the query texts to embed.

Questions about papers quote titles and name venues, methods and years; these helpers pull those out
without an LLM, deterministically (no set iteration decides an order).
"""

from __future__ import annotations

import re

#: English function words, question words and scholarly filler ("paper", "title") that never identify
#: an entity or a relation. One list for BM25 tokenisation, keyword extraction and label matching.
STOPWORDS = frozenset(
    """a an the of in on at to for from by with about as and or not no is are was were be been being has have had
    do does did which what who whom whose when where why how that this these those there their its it they them
    paper papers publication publications title titled give list name show find all any some many much more most
    than into onto over under between within without per each other such same also only please me my our your
    can could would should will shall may might must used use uses using among true false none""".split()
)

_QUOTE_PAIRS = (("'", "'"), ('"', '"'), ("‘", "’"), ("“", "”"))


def _quoted_re(min_len: int) -> re.Pattern[str]:
    alts = [f"{re.escape(o)}([^{re.escape(c)}]{{{min_len},}}){re.escape(c)}" for o, c in _QUOTE_PAIRS]
    return re.compile("|".join(alts))


_QUOTED = {n: _quoted_re(n) for n in (2, 3)}


def quoted_re(min_len: int = 3) -> re.Pattern[str]:
    """The one pattern for text inside matching quotes (titles are quoted in KGQA questions)."""
    if min_len not in _QUOTED:
        _QUOTED[min_len] = _quoted_re(min_len)
    return _QUOTED[min_len]


def quoted_spans(question: str, min_len: int = 3) -> list[str]:
    """Text inside matching quotes, in order."""
    return [next(g for g in m.groups() if g).strip() for m in quoted_re(min_len).finditer(question)]


def strip_quoted(question: str, min_len: int = 3) -> str:
    """The question with quoted spans removed (whitespace collapsed)."""
    return re.sub(r"\s+", " ", quoted_re(min_len).sub(" ", question)).strip()


_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


def content_tokens(text: str) -> list[str]:
    """Lower-cased word tokens without stop words (BM25 tokenisation)."""
    return [t for t in _TOKEN_RE.findall(text.lower()) if t not in STOPWORDS]


def unique_ci(items: list[str]) -> list[str]:
    """Non-empty items, first occurrence of each (case-insensitive), in order."""
    first: dict[str, str] = {}
    for k in items:
        if k:
            first.setdefault(k.lower(), k)
    return list(first.values())


def keyword_candidates(question: str, max_ngram: int = 3) -> list[str]:
    """LLM-free keyword/entity extraction: quoted spans, capitalised runs, then content-word n-grams.

    Deterministic stand-in for the LLM planning/extraction prompts of FiDeLiS and MindMap.
    """
    out: list[str] = list(quoted_spans(question))
    words = re.findall(r"[A-Za-z0-9][\w\-+.#/]*", quoted_re().sub(" ", question))
    # Capitalised runs (not sentence-initial question words): named entities such as "ICSA", "Petri Net".
    run: list[str] = []
    for i, w in enumerate(words + [""]):
        is_cap = bool(w) and (w[0].isupper() or w.isupper()) and not (i == 0 and w.lower() in STOPWORDS)
        if is_cap and w.lower() not in STOPWORDS:
            run.append(w)
        else:
            if run:
                out.append(" ".join(run))
            run = []
    content = [w for w in words if w.lower() not in STOPWORDS and len(w) > 1]
    for n in range(min(max_ngram, 2), 0, -1):
        for i in range(len(content) - n + 1):
            out.append(" ".join(content[i : i + n]))
    return unique_ci(out)


def query_texts(question: str) -> list[str]:
    """Texts to embed for scoring relations/entities: the question, and the question without quoted spans
    (a quoted title names the start entity; left in, it drowns the relation words in the embedding)."""
    stripped = strip_quoted(question)
    return list(dict.fromkeys([question] + ([stripped] if stripped and stripped != question else [])))
