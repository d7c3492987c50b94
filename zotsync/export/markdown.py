"""The reading-list page: title, summary line, then one table per category.

Whatever Zotero or the catalogue holds, each row stays one table row and each cell one cell: text and
link targets lose their line breaks, controls and bidi overrides, and a link whose target could run
code (`javascript:`, `data:`, …) is written as text.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Iterator, Sequence
from itertools import groupby
from pathlib import PurePosixPath

from ..formats import Exporter, Needs, Output
from ..labels import Labels, labels_for
from ..model import Link, Placement
from ..text import FLATTEN_CHANGES, flatten
from .base import ExportInput

# Link targets written as links: the web, mail, Zotero's own, DOIs, and paths relative to the page.
LINK_SCHEMES = frozenset({"http", "https", "mailto", "zotero", "doi"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# An entity in a link target (`&colon;`) is decoded by Markdown renderers: keep it literal text.
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_TARGET_CODES = {" ": "%20", "(": "%28", ")": "%29", "|": "%7C", "<": "%3C", ">": "%3E", "\\": "%5C"}
_TARGET_CHARS = re.compile("[" + re.escape("".join(_TARGET_CODES)) + "]")
# Text without any of these is its own cell or target: what `flatten` changes (whitespace other than
# single inner spaces, controls, bidi overrides) and what the escapes below change.
_CELL_SPECIAL = re.compile("[" + FLATTEN_CHANGES + r"&<>|\\]")
_TARGET_SPECIAL = re.compile("[" + FLATTEN_CHANGES + r" ()|<>\\&]")


def render_markdown(
    title: str, description: str, rows: Sequence[Placement], labels: Labels | None = None
) -> str:
    labels = labels or labels_for()
    read = sum(row.status == "read" for row in rows)
    header = "| " + " | ".join(
        cell(name) for name in (labels.status, labels.paper, labels.venue, labels.why, labels.links)
    )
    header += " |\n| --- | --- | --- | --- | --- |"
    parts = [f"# {cell(title or labels.title)}"]
    if description:
        parts.append(cell(description))
    parts.append(cell(labels.summary.format(entries=len(rows), read=read, unread=len(rows) - read)))
    for category, group in groupby(rows, key=lambda row: row.category):
        rendered = "\n".join(table_row(row, labels) for row in group)
        parts.append(f"## {cell(category)}\n\n{header}\n{rendered}")
    # The final newline joins the last part, not the whole page: `join(…) + "\n"` copied it once more
    # while the parts were still alive (46 MB each at 100k items).
    parts[-1] += "\n"
    return "\n\n".join(parts)


def table_row(row: Placement, labels: Labels) -> str:
    status = (labels.read if row.status == "read" else labels.unread) + (
        f" {labels.noted}" if row.noted else ""
    )
    venue = row.venue or (f"{labels.no_venue} · {row.year}" if row.year else labels.no_venue)
    why = row.why or (labels.tags + " / ".join(row.tags) if row.tags else "")
    links = " / ".join(link_markdown(label, link.url) for label, link in link_labels(row.links, labels))
    return f"| {cell(status)} | {cell(row.title)} | {cell(venue)} | {cell(why)} | {links} |"


def link_labels(links: Sequence[Link], labels: Labels) -> list[tuple[str, Link]]:
    """Each link with the label the page shows: a curator's own as written, the ones zotsync added in
    the page's words (the second PDF is `PDF2`, …)."""
    words = {"paper": labels.link_paper, "zotero": labels.link_zotero, "archive": labels.link_archive}
    shown, pdfs = [], 0
    for link in links:
        if link.kind == "pdf":
            pdfs += 1
            shown.append((labels.link_pdf + (str(pdfs) if pdfs > 1 else ""), link))
        else:
            shown.append((words.get(link.kind, link.label), link))
    return shown


def link_markdown(label: str, url: str) -> str:
    """`[label](target)`, or the label and the target as text when the target is not a safe link."""
    target = link_target(url)
    text = _label_text(label)
    if not safe_target(target):
        return f"{text} ({cell(url)})" if url.strip() else text
    return f"[{text}]({target})"


@functools.lru_cache(maxsize=1024)  # a page repeats a handful of labels on every row
def _label_text(label: str) -> str:
    return cell(label).replace("[", "\\[").replace("]", "\\]")


def safe_target(target: str) -> bool:
    scheme = _SCHEME.match(target)
    return bool(target) and (scheme is None or scheme.group(1).lower() in LINK_SCHEMES)


def cell(text: str) -> str:
    """Keep a table cell one cell: no line breaks, controls or bidi overrides, no raw HTML, no bare
    pipes."""
    if not (_CELL_SPECIAL.search(text) or "  " in text or text[:1] == " " or text[-1:] == " "):
        return text  # most text: nothing to change (a page may have 100k rows)
    text = flatten(text)
    return html.escape(text, quote=False).replace("\\", "\\\\").replace("|", "\\|")


def link_target(url: str) -> str:
    """A link target on one line, like cell text, with what would end a Markdown link or break the table
    around it percent-encoded."""
    if not _TARGET_SPECIAL.search(url):
        return url
    url = flatten(url)
    return _ENTITY.sub("\\\\&", _TARGET_CHARS.sub(lambda m: _TARGET_CODES[m.group(0)], url))


def _outputs(given: ExportInput) -> Iterator[Output]:
    page = given.page
    yield Output(
        PurePosixPath(EXPORTER.page), render_markdown(page.title, page.description, page.rows, page.labels)
    )


EXPORTER = Exporter(
    name="md",
    summary="the reading list as a Markdown page, one table per category",
    page="catalog.md",
    render=_outputs,
    needs=Needs.ZOTERO_LINKS,
)
