"""Source-document linking hook (thesis §4.9, optional): a linker may add passages from a hub's source
document (e.g. the paper's full text) to the hub's context before the partial answer is written.
The default links nothing, so HubLink answers from the graph alone, as in the thesis's experiments."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class SourceLinker(Protocol):
    def link(self, question: str, hub_root: str, title: str, doi: str | None) -> list[str]:
        """Extra context texts for this hub (may be empty)."""
        ...


class NoLinker:
    def link(self, question: str, hub_root: str, title: str, doi: str | None) -> list[str]:
        return []
