"""Input errors that name the file, row/entry and field, so a researcher can fix bad data at once."""

from __future__ import annotations


class HubLabError(Exception):
    """Base class for all errors HubLab raises on purpose."""


class ServiceUnavailable(HubLabError):
    """A server the run depends on (a Milvus server, ...) stopped answering. Not a per-question error: every
    remaining question would fail the same way after its timeout, so the run stops at once (its checkpoint kept,
    so a rerun once the server is back resumes) with one line naming the server."""


class InputError(HubLabError):
    """Bad input data: carries where it is (file, row or entry, field) and what was expected."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        row: int | str | None = None,
        field: str | None = None,
        line: int | None = None,
    ) -> None:
        self.file = file
        self.row = row
        self.field = field
        self.line = line
        self.detail = message
        where = []
        if file is not None:
            where.append(f"file {file}")
        if line is not None:
            where.append(f"line {line}")
        if row is not None:
            where.append(f"row {row}" if isinstance(row, int) else f"entry {row}")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class InputErrors(InputError):
    """Every problem one validation pass found (printed one per line), so a user fixes them all in one go."""

    def __init__(self, errors: list[InputError]) -> None:
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.detail, file=first.file, row=first.row, field=first.field, line=first.line)
        self.args = ("\n".join(str(e) for e in self.errors),)

    def __str__(self) -> str:
        return self.args[0]


def raise_all(errors: list[InputError]) -> None:
    """Raise nothing, the one error, or all of them together."""
    flat: list[InputError] = []
    for e in errors:
        flat.extend(e.errors if isinstance(e, InputErrors) else [e])
    if len(flat) == 1:
        raise flat[0]
    if flat:
        raise InputErrors(flat)
