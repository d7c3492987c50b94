"""Exporters: each renders the page rows to text; writing is shared (outputs.py), atomic and byte-stable."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..labels import Labels, labels_for
from ..model import Placement
from .csv import render_csv
from .markdown import render_markdown


@dataclass(frozen=True, slots=True)
class Page:
    title: str
    description: str
    rows: Sequence[Placement]
    labels: Labels = field(default_factory=labels_for)  # the Markdown page's own words


Renderer = Callable[[Page], str]
RENDERERS: dict[str, Renderer] = {
    "md": lambda page: render_markdown(page.title, page.description, page.rows, page.labels),
    "csv": lambda page: render_csv(page.rows),
}
# The formats that show Zotero's links (paper, PDFs, zotero://). A CSV has no links column and its
# note_link is the curator's Note link, never one of Zotero's: its rows need none (0.3 s at 100k items).
SHOWS_ZOTERO_LINKS = frozenset({"md"})
