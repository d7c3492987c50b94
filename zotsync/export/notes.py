"""Note pages: one Markdown page per paper with Zotero notes or annotations, `notes/<ZOTERO_KEY>.md`.

A page is its head — what the page rows say of the paper: title, authors, venue and year, links, tags,
the curator's why — and its body: each child note as Markdown (`notehtml`), then the annotations of
each attachment in reading order. The head is kept in the store's record of the file (`made_from`), so a
sync whose page rows are as before can rewrite a note page whose notes changed without reconciling, and
one whose rows changed can keep every note page whose head and notes did not (`export.base.ExportInput
.unchanged`).

Everything on the page is text as on the reading list (`mdtext`): the head's data and the annotations'
text and comments are escaped; only the links, headings, quotes and lists are the page's own.

One note never stops the list: a note the converter cannot read (nested deeper than a page shows) is
shown on its page as plain text, with one warning; a note longer than MAX_NOTE is cut there, with a
line (the label `note_cut`) that says so. With `exports.zotero_links` other than `local`, the
body holds no `zotero://` link: an image of the note, an image annotation or a link of the note into
Zotero is written as text (a reader of the site has no Zotero to open it).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import posixpath
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath

from ..formats import Output
from ..labels import Labels
from ..model import Item, Link, PaperNotes, Placement
from ..searchtext import note_text
from .base import ExportInput, LinkPlan, link_labels
from .mdtext import LINK_SCHEMES, heading, inline, line, link

log = logging.getLogger("zotsync")

# The characters of a note's HTML a page shows: its tree costs about 60 bytes a character while it is
# converted (a 20 MB note took 1.3 GB), so a longer note is cut here, with a line that says so.
MAX_NOTE = 2_000_000

FOLDER = "notes"
NOTE_LABEL = "Note"  # the label of the row's link to its note page, as the curator's own Note links have

# Zotero's annotation colours (its reader's palette) → a marker that shows the colour in any renderer.
COLOUR_MARKS = {
    "#ffd400": "🟡",
    "#ff6666": "🔴",
    "#5fb236": "🟢",
    "#2ea8e5": "🔵",
    "#a28ae5": "🟣",
    "#e56eee": "🟪",
    "#f19837": "🟠",
    "#aaaaaa": "⚪",
}


def folder_prefix(folder: Path) -> str:
    """What the path of every note page in `folder` (exports.dir) starts with, as the record writes it."""
    return os.path.join(folder, FOLDER, "")


def key_of(path: str, prefix: str) -> str | None:
    """The Zotero key of the note page at `path` (absolute, as the record writes it), or None when it is
    no note page (`prefix`: `folder_prefix`). Strings, not Paths: a sync looks at 35,000 of them."""
    if not path.startswith(prefix) or not path.endswith(".md"):
        return None
    key = path[len(prefix) : -3]
    return key if "/" not in key and os.sep not in key else None


def page_path(key: str) -> str:
    """A paper's note page, relative to `exports.dir`: named by its Zotero key, stable whatever the title."""
    return f"{FOLDER}/{key}.md"


def note_plan(plan: LinkPlan, papers: Iterable[str], rows: Sequence[Placement]) -> LinkPlan:
    """`plan` with a note page for each of `papers` (those with notes) that has a row on the page."""
    on_page = {row.zotero_key for row in rows if row.zotero_key}
    notes = {key: page_path(key) for key in sorted(set(papers) & on_page)}
    return dataclasses.replace(plan, notes=notes)


def with_note_links(rows: Sequence[Placement], plan: LinkPlan) -> list[Placement]:
    """The rows with 📝 and a Note link for each paper with a note page: the curator's own `noted:`
    (true or false) and Note link win."""
    marked = []
    for row in rows:
        target = plan.notes.get(row.zotero_key) if row.zotero_key else None
        if target is None:
            marked.append(row)
            continue
        links = row.links
        if not any(each.label == NOTE_LABEL for each in links):
            # After the paper's own link, as the seed page orders them (Paper / Note / PDF / Zotero).
            at = next((i + 1 for i, each in enumerate(links) if each.kind == "paper"), 0)
            links = (*links[:at], Link(NOTE_LABEL, target, "note"), *links[at:])
        marked.append(row._replace(noted=row.noted if row.noted_by_curator else True, links=links))
    return marked


# -- the head ------------------------------------------------------------------------------------------


def paper_rows(rows: Sequence[Placement], plan: LinkPlan) -> dict[str, Placement]:
    """Each paper with a note page → its first row, with the first `why` any of its rows has."""
    first: dict[str, Placement] = {}
    for row in rows:
        key = row.zotero_key
        if key and key in plan.notes:
            if key not in first:
                first[key] = row
            elif not first[key].why and row.why:
                first[key] = first[key]._replace(why=row.why)
    return first


# Where the `meaning` processor's results are joined into the library: each curated paper's curated
# papers nearest in meaning (search.semantic), which a note page lists.
RELATED = "meaning"


def heads(given: ExportInput) -> dict[str, str]:
    """Each note page's path → its head, for every note page of the plan (with the curated papers
    nearest in meaning, when search by meaning is on)."""
    labels = given.page.labels
    related = given.library.derived.get(RELATED, {})
    titles = {row.zotero_key: row.title for row in reversed(given.page.rows) if row.zotero_key}
    made = {}
    for key, row in paper_rows(given.page.rows, given.plan).items():
        path = given.plan.notes[key]
        near = [(other, titles[other]) for other in related.get(key, ()) if other in titles]
        made[path] = head(row, path, labels) + related_section(near, path, given.plan, labels)
    return made


def related_section(near: Sequence[tuple[str, str]], path: str, plan: LinkPlan, labels: Labels) -> str:
    """ "Related in this list": each paper's title, linked to its note page when it has one."""
    if not near:
        return ""
    items = []
    for key, title in near:
        target = plan.notes.get(key)
        label = title or labels.no_title
        items.append(f"- {link(label, LinkPlan.rebase(path, target)) if target else inline(label)}")
    return f"\n## {heading(labels.related)}\n\n" + "\n".join(items) + "\n"


def head(row: Placement, path: str, labels: Labels) -> str:
    """The top of the note page at `path`: what the reading list says of the paper."""
    parts = [f"# {heading(row.title) or heading(labels.no_title)}"]
    year = "" if row.year in row.venue else row.year  # a venue may carry its year already (OSDI · 2023)
    facts = [text for text in ("; ".join(row.authors), row.venue, year) if inline(text)]
    if facts:
        parts.append(line(" · ".join(facts)))
    shown = [each for each in row.links if each.kind != "note"]
    if shown:
        labelled = link_labels(shown, labels)
        parts.append(" / ".join(link(label, LinkPlan.rebase(path, each.url)) for label, each in labelled))
    if row.tags:
        parts.append(line(labels.tags + " / ".join(row.tags)))
    if inline(row.why):
        parts.append(line(f"{labels.why}: {row.why}"))
    return "\n\n".join(parts) + "\n"


# -- the body ------------------------------------------------------------------------------------------


def page_text(page_head: str, notes: PaperNotes, labels: Labels, zotero_links: str = "local") -> str:
    """The whole note page: its head, then the notes and the annotations. `zotero_links`: the
    page's `exports.zotero_links` (only `local` links into Zotero)."""
    in_zotero = zotero_links == "local"
    parts = [page_head.rstrip("\n")]
    bodies = [note_body(note, labels, in_zotero) for note in notes.notes]
    if any(bodies):
        parts.append(f"## {heading(labels.notes)}")
        parts.append("\n\n* * *\n\n".join(body for body in bodies if body))
    if notes.annotated:
        parts.append(f"## {heading(labels.annotations)}")
        for attachment, annotations in notes.annotated:
            title = (
                heading(attachment.title) or heading(attachment.get("filename")) or heading(labels.link_pdf)
            )
            parts.append(f"### {title}")
            texts = [annotation_text(annotation, attachment, labels, in_zotero) for annotation in annotations]
            parts += [text for text in texts if text]
    return "\n\n".join(parts) + "\n"


def note_body(note: Item, labels: Labels, in_zotero: bool = True) -> str:
    """One note as Markdown; a note the converter cannot read, as plain text with one warning."""
    from .notehtml import note_markdown  # markdownify and BeautifulSoup: imported only to make a page

    html = note.get("note")
    size, cut = len(html), ""
    if size > MAX_NOTE:  # cut before the tag that crosses the limit, so that no tag is split
        tag = html.rfind("<", 0, MAX_NOTE + 1)
        html = html[: tag if tag >= 0 else MAX_NOTE]
        cut = line(labels.note_cut.format(shown=f"{len(html):,}", size=f"{size:,}"))
    schemes = LINK_SCHEMES if in_zotero else LINK_SCHEMES - {"zotero"}
    try:
        body = note_markdown(html, 2, _image_writer(note, labels, in_zotero), schemes)
    except Exception as exc:  # whatever one note holds, every other page is made
        reason = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        log.warning("note %s of %s is shown as plain text: %s", note.key, note.parent_key, reason[:200])
        body = plain_text(html)
    return f"{body}\n\n{cut}" if cut else body


def plain_text(html: str) -> str:
    """A note's words with no structure: one paragraph per block of its HTML, read without recursion."""
    return "\n\n".join(line(each) for each in note_text(html, "\n").split("\n") if each.strip())


def annotation_text(annotation: Item, attachment: Item, labels: Labels, in_zotero: bool = True) -> str:
    """One annotation: the highlighted or underlined text as a quote, then where it is (its colour, its
    page label, what it is when it is no text: a link into Zotero when `in_zotero`), then its comment."""
    kind = annotation.get("annotationType")
    where = [COLOUR_MARKS.get(annotation.get("annotationColor").lower(), "")]
    page = annotation.get("annotationPageLabel")
    if page.strip():
        where.append(inline(labels.page_label.format(page=page)))
    if kind in ("image", "ink"):
        word = labels.image if kind == "image" else labels.ink
        where.append(link(word, _open_in_zotero(annotation, attachment)) if in_zotero else inline(word))
    blocks = []
    quoted = [line(text) for text in annotation.get("annotationText").splitlines()]
    if any(quoted):
        blocks.append("\n".join(f"> {text}" if text else ">" for text in quoted))
    marker = " ".join(part for part in where if part)
    if marker:
        blocks.append(marker)
    comment = [line(text) for text in annotation.get("annotationComment").splitlines()]
    if any(comment):
        blocks.append("  \n".join(text for text in comment if text))
    return "\n\n".join(blocks)


def _open_in_zotero(annotation: Item, attachment: Item) -> str:
    """`zotero://open-pdf/…`: the attachment opened at the annotation (Zotero's reader scrolls to it)."""
    library = "library" if attachment.library_type != "group" else f"groups/{attachment.library_id}"
    target = f"zotero://open-pdf/{library}/items/{attachment.key}"
    page = _page_number(annotation.get("annotationPosition"))
    query = ([f"page={page}"] if page else []) + [f"annotation={annotation.key}"]
    return target + "?" + "&".join(query)


def _page_number(position: str) -> int | None:
    """The page an annotation's position (JSON text) names, counted from 1; None when it names none a
    PDF can have (1e400, true, a string, nesting 100,000 deep)."""
    try:
        index = json.loads(position or "{}").get("pageIndex")
    except (ValueError, RecursionError, AttributeError):
        return None
    if isinstance(index, float) and math.isfinite(index) and index.is_integer():
        index = int(index)
    return index + 1 if type(index) is int and 0 <= index < 1_000_000 else None


def _image_writer(note: Item, labels: Labels, in_zotero: bool = True) -> Callable[[str, str], str]:
    library = "library" if note.library_type != "group" else f"groups/{note.library_id}"

    def image(attachment_key: str, src: str) -> str:
        if attachment_key and in_zotero:
            return link(labels.image, f"zotero://select/{library}/items/{attachment_key}")
        if src.startswith(("http://", "https://")):
            return link(labels.image, src)
        return inline(labels.image)

    return image


# -- the outputs ---------------------------------------------------------------------------------------


def outputs(given: ExportInput) -> Iterator[Output]:
    """Every note page of the plan: the unchanged ones kept (`ExportInput.unchanged`), the rest made
    from the notes the library holds for them."""
    labels, zotero_links = given.page.labels, given.page.layout.zotero_links
    page_heads = heads(given) if given.note_heads is None else given.note_heads
    for path, page_head in sorted(page_heads.items()):
        if given.unchanged.get(path) == page_head:
            yield Output(PurePosixPath(path), "", made_from=page_head, kept=True)
            continue
        notes = given.library.notes.get(posixpath.basename(path)[: -len(".md")])
        if notes:
            text = page_text(page_head, notes, labels, zotero_links)
            yield Output(PurePosixPath(path), text, made_from=page_head)


def remade(
    page_heads: Mapping[str, str],
    notes: Mapping[str, PaperNotes],
    labels: Labels,
    zotero_links: str = "local",
) -> Iterator[Output]:
    """The note pages at `page_heads` (path → head, as the last export recorded them) made again from
    the papers' `notes` now: for a sync in which only notes changed, so the heads are as they were."""
    for path, page_head in sorted(page_heads.items()):
        paper = notes.get(posixpath.basename(path)[: -len(".md")])
        if paper:
            text = page_text(page_head, paper, labels, zotero_links)
            yield Output(PurePosixPath(path), text, made_from=page_head)
