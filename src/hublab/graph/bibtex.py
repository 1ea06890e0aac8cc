"""A small BibTeX reader: entries → raw field strings, LaTeX accents decoded to Unicode so names match the
ORKG export's spelling. Errors are :class:`hublab.errors.InputError` naming the file, entry key and field.

No BibTeX library is installed in the project environment, and the file is machine-written (JabRef on dblp
records), so a brace-matching reader covers it; ``bibtexparser`` could replace ``read_bib``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from hublab.errors import InputError

# ---------------------------------------------------------------- LaTeX → Unicode

# accent command → combining character (composed with NFC afterwards)
_ACCENTS = {
    "'": "\u0301", "`": "\u0300", '"': "\u0308", "^": "\u0302", "~": "\u0303", "=": "\u0304",
    ".": "\u0307", "c": "\u0327", "v": "\u030c", "u": "\u0306", "H": "\u030b", "r": "\u030a", "k": "\u0328",
}
_SYMBOLS = {
    "aa": "å", "AA": "Å", "ss": "ß", "o": "ø", "O": "Ø", "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ",
    "l": "ł", "L": "Ł", "i": "i", "j": "j", "&": "&", "_": "_", "%": "%", "$": "$", "#": "#", "{": "{", "}": "}",
}
# \'{e}, \'e, \'{\i}, \c{c}, \"{u} …
_ACCENT_RE = re.compile(
    r"\\([" + re.escape("'`\"^~=.") + r"]|[cvuHrk](?=[{ ]))"  # the accent command
    r"\s*(?:\{\s*(\\[a-zA-Z]+|.)\s*\}|(\\[a-zA-Z]+|\w))"  # its argument: {x}, {\i} or x
)
_SYMBOL_RE = re.compile(r"\\([a-zA-Z]+|[&_%$#{}])")


def _base_char(token: str) -> str:
    if token.startswith("\\"):
        return _SYMBOLS.get(token[1:], token[1:])
    return token


def latex_to_unicode(text: str) -> str:
    """Decode the LaTeX escapes this bibliography uses and drop grouping braces (``{IEEE}`` → ``IEEE``)."""
    out = _ACCENT_RE.sub(lambda m: _base_char(m.group(2) or m.group(3)) + _ACCENTS[m.group(1)], text)
    out = _SYMBOL_RE.sub(lambda m: _SYMBOLS.get(m.group(1), m.group(0)), out)
    out = out.replace("{", "").replace("}", "")
    out = re.sub(r"\s+", " ", out).strip()
    return unicodedata.normalize("NFC", out)


# ---------------------------------------------------------------- BibTeX entries


@dataclass(frozen=True)
class BibEntry:
    """One raw BibTeX entry: type, citation key and fields (lower-cased names, raw brace-stripped values)."""

    entry_type: str
    key: str
    fields: dict[str, str]
    line: int


def _read_value(text: str, i: int, *, file: str, key: str, name: str) -> tuple[str, int]:
    """Read a field value starting at ``text[i]``: ``{…}`` (nested), ``"…"`` or a bare word/number."""
    if text[i] == "{":
        depth, j = 0, i
        while j < len(text):
            c = text[j]
            if c == "\\":
                j += 2
                continue
            if c == "\n" and text.startswith("@", j + 1 + (len(text[j + 1 :]) - len(text[j + 1 :].lstrip(" \t")))):
                raise InputError(f"unbalanced braces: {depth} '{{' not closed before the next entry",
                                 file=file, row=key, field=name)
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return text[i + 1 : j], j + 1
            j += 1
        raise InputError("unbalanced braces in value", file=file, row=key, field=name)
    if text[i] == '"':
        j = text.find('"', i + 1)
        if j < 0:
            raise InputError("unterminated quoted value", file=file, row=key, field=name)
        return text[i + 1 : j], j + 1
    m = re.compile(r"[\w.:/-]+").match(text, i)
    if not m:
        raise InputError(f"cannot read value starting with {text[i:i + 20]!r}", file=file, row=key, field=name)
    return m.group(0), m.end()


_ENTRY_RE = re.compile(r"@(\w+)\s*\{\s*([^,\s]+)\s*,")
_FIELD_RE = re.compile(r"\s*,?\s*([A-Za-z][\w-]*)\s*=\s*")


def read_bib(path: str | Path) -> list[BibEntry]:
    """All entries of a BibTeX file, in file order. Comment/preamble/string blocks are skipped."""
    path = Path(path)
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputError("file not found", file=file) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc}", file=file) from exc
    entries: list[BibEntry] = []
    seen: set[str] = set()
    pos = 0
    while True:
        at = text.find("@", pos)
        if at < 0:
            break
        m = _ENTRY_RE.match(text, at)
        etype_m = re.match(r"@(\w+)", text[at:])
        if etype_m and etype_m.group(1).lower() in ("comment", "preamble", "string"):
            _, pos = _read_value(text, text.index("{", at), file=file, key=etype_m.group(1), name="block")
            continue
        line = text.count("\n", 0, at) + 1
        if not m:
            raise InputError("malformed entry header (expected '@Type{key,')", file=file, row=f"at line {line}")
        etype, key = m.group(1), m.group(2)
        if key in seen:
            raise InputError("duplicate citation key", file=file, row=key)
        seen.add(key)
        fields: dict[str, str] = {}
        i = m.end()
        while True:
            while i < len(text) and text[i] in " \t\r\n,":
                i += 1
            if i >= len(text):
                last = list(fields)[-1] if fields else None
                raise InputError("entry not closed with '}' (unbalanced braces?)", file=file, row=key, field=last)
            if text[i] == "}":
                i += 1
                break
            if text[i] == "@" and fields:
                last = list(fields)[-1]
                raise InputError("unbalanced braces: the entry is not closed before the next entry (a '{' in "
                                 f"field '{last}' or before it has no matching '}}')", file=file, row=key, field=last)
            fm = _FIELD_RE.match(text, i)
            if not fm:
                snippet = text[i : i + 30].splitlines()[0] if text[i : i + 30] else ""
                raise InputError(f"expected 'name = {{value}}', got {snippet!r}", file=file, row=key)
            name = fm.group(1).lower()
            value, i = _read_value(text, fm.end(), file=file, key=key, name=name)
            fields[name] = value
        entries.append(BibEntry(etype, key, fields, line))
        pos = i
    return entries
