"""The reading-list page: title, summary line, then one table per category.

Whatever Zotero or the catalogue holds, each row stays one table row and each cell one cell, and every
text renders as the text it is (`mdtext`): no link, image, attribute or HTML forms from data, and a link
whose target could run code (`javascript:`, `data:`, …) is written as text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby
from pathlib import PurePosixPath

from ..formats import Exporter, Needs, Output
from ..labels import Labels, labels_for
from ..model import Placement
from . import notes
from .base import ExportInput, link_labels
from .mdtext import cell, inline, line, link


def render_markdown(
    title: str, description: str, rows: Sequence[Placement], labels: Labels | None = None
) -> str:
    labels = labels or labels_for()
    read = sum(row.status == "read" for row in rows)
    header = "| " + " | ".join(
        cell(name) for name in (labels.status, labels.paper, labels.venue, labels.why, labels.links)
    )
    header += " |\n| --- | --- | --- | --- | --- |"
    parts = [f"# {inline(title) or inline(labels.title)}"]
    if description := line(description):
        parts.append(description)
    parts.append(line(labels.summary.format(entries=len(rows), read=read, unread=len(rows) - read)))
    words = Words.of(labels)
    for category, group in groupby(rows, key=lambda row: row.category):
        rendered = "\n".join(table_row(row, labels, words) for row in group)
        parts.append(f"## {inline(category)}\n\n{header}\n{rendered}")
    # The final newline joins the last part, not the whole page: `join(…) + "\n"` copied it once more
    # while the parts were still alive (46 MB each at 100k items).
    parts[-1] += "\n"
    return "\n\n".join(parts)


@dataclass(frozen=True, slots=True)
class Words:
    """The page's words as cell text, escaped once per page rather than once per row."""

    status: dict[tuple[bool, bool], str]  # (read, noted) → the Status cell
    no_title: str
    no_venue: str

    @classmethod
    def of(cls, labels: Labels) -> Words:
        marks = {True: labels.read, False: labels.unread}
        status = {
            (read, noted): cell(marks[read] + (f" {labels.noted}" if noted else ""))
            for read in (True, False)
            for noted in (True, False)
        }
        return cls(status, cell(labels.no_title), cell(labels.no_venue))


def table_row(row: Placement, labels: Labels, words: Words) -> str:
    # Data that shows nothing (empty, or only spaces and controls) gives way to the page's words.
    title = cell(row.title) or words.no_title
    venue = cell(row.venue) or (f"{words.no_venue} · {cell(row.year)}" if row.year else words.no_venue)
    why = cell(row.why) or (cell(labels.tags + " / ".join(row.tags)) if row.tags else "")
    links = " / ".join(link(label, shown.url, cell) for label, shown in link_labels(row.links, labels))
    return f"| {words.status[row.status == 'read', row.noted]} | {title} | {venue} | {why} | {links} |"


def _outputs(given: ExportInput) -> Iterator[Output]:
    """The reading list, then the note pages of the plan (none when it names none)."""
    page = given.page
    yield Output(
        PurePosixPath(EXPORTER.page), render_markdown(page.title, page.description, page.rows, page.labels)
    )
    yield from notes.outputs(given)


EXPORTER = Exporter(
    name="md",
    summary="the reading list as a Markdown page, one table per category",
    page="catalog.md",
    render=_outputs,
    needs=Needs.ZOTERO_LINKS | Needs.NOTES,
)
