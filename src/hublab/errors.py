"""Input errors that name the file, row/entry and field, so a researcher can fix bad data at once."""

from __future__ import annotations


class HubLabError(Exception):
    """Base class for all errors HubLab raises on purpose."""


class InputError(HubLabError):
    """Bad input data: carries where it is (file, row or entry, field) and what was expected."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        row: int | str | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.row = row
        self.field = field
        self.detail = message
        where = []
        if file is not None:
            where.append(f"file {file}")
        if row is not None:
            where.append(f"row {row}" if isinstance(row, int) else f"entry {row}")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
