"""The reading-list page: title, summary line, then one table per category.

Whatever Zotero or the catalogue holds, each row stays one table row and each cell one cell, and every
text renders as the text it is (`mdtext`): no link, image, attribute or HTML forms from data, and a link
whose target could run code (`javascript:`, `data:`, …) is written as text.

Besides the page (`catalog.md`) the exporter may write, as the plan says: a page per category and an
index page in `catalog.md` (`exports.split: category`), the tags page (`exports.tags_page`), and the
sortable-tables script for a MkDocs site (`exports.sortable`). Every relative link on them goes through
the plan (`LinkPlan.rebase`, `LinkPlan.href`), so it resolves from whichever file it is written in.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from itertools import groupby
from pathlib import PurePosixPath

from .. import normalize
from ..formats import Exporter, Needs, Output
from ..labels import COLUMN_LABELS, COLUMNS, Labels, labels_for
from ..model import ZOTERO_KEY, Placement
from . import notes, suggestions
from .base import ExportInput, Layout, LinkPlan, link_labels
from .mdtext import cell, heading, inline, line, link

PAGE = "catalog.md"
# The Why cell of a row without a curated why shows the item's tags; past this many it says how many
# more there are: a paper tagged by every import it went through (17 tags, automatic ones included)
# otherwise fills the cell and wraps every other column to half a dozen lines.
MAX_TAGS_SHOWN = 3
MAX_AUTHORS_SHOWN = 2  # the Authors column: the first two last names, then "et al."


def render_markdown(
    title: str,
    description: str,
    rows: Sequence[Placement],
    labels: Labels | None = None,
    layout: Layout | None = None,
    here: str = PAGE,
) -> bytes:
    """The whole page, as the UTF-8 it is written in: title, description, summary, a table per category.
    `here`: the file it is written to, relative to `exports.dir` (the links a row holds are relative to
    the top of it). Made a category at a time: a str holding one character past U+FFFF (the noted mark
    📝) takes four bytes a character, and the page as one str took the memory of four pages, twice while
    it was joined (200 MB at 100k items)."""
    labels = labels or labels_for()
    layout = layout or Layout()
    parts = page_top(title, description, rows, labels)
    # "replace": half a surrogate pair, which no source or catalogue lets through, becomes `?`, not a crash.
    encoded = ["\n\n".join(parts).encode("utf-8", "replace")]
    table = Table.of(labels, layout, here)
    for category, group in groupby(rows, key=lambda row: row.category):
        encoded.append(f"## {heading(category)}\n\n{table.render(group)}".encode("utf-8", "replace"))
    # The final newline joins the last part, not the whole page: `join(…) + b"\n"` copied it once more.
    encoded[-1] += b"\n"
    return b"\n\n".join(encoded)


def page_top(title: str, description: str, rows: Sequence[Placement], labels: Labels) -> list[str]:
    """The top of the page (or of the index page): the title, the description if any, the summary."""
    parts = [f"# {heading(title) or heading(labels.title)}"]
    if description := line(description):
        parts.append(description)
    parts.append(summary(rows, labels))
    return parts


def summary(rows: Sequence[Placement], labels: Labels) -> str:
    """The counts under the title: entries (rows), and papers too when some sit in several categories."""
    read = sum(row.status == "read" for row in rows)
    # a paper is its Zotero item, else (an unmatched curated entry) its title; no call per row
    papers = {row.zotero_key or "title:" + normalize.title(row.title) for row in rows}
    if len(papers) == len(rows):
        return line(labels.summary.format(entries=len(rows), read=read, unread=len(rows) - read))
    read_papers = len({_paper(row) for row in rows if row.status == "read"})  # read in any of its rows
    return line(
        labels.summary_papers.format(
            papers=len(papers), entries=len(rows), read=read_papers, unread=len(papers) - read_papers
        )
    )


def _paper(row: Placement) -> str:
    """Which paper a row shows: its Zotero item, else (an unmatched curated entry) its title."""
    return row.zotero_key or "title:" + normalize.title(row.title)


@dataclass(frozen=True, slots=True)
class Words:
    """The page's words as cell text, escaped once per page rather than once per row."""

    status: dict[tuple[bool, bool], str]  # (read, noted) → the Status cell
    no_title: str
    no_venue: str
    retracted: str  # after a retracted paper's title

    @classmethod
    def of(cls, labels: Labels) -> Words:
        marks = {True: labels.read, False: labels.unread}
        status = {
            (read, noted): cell(marks[read] + (f" {labels.noted}" if noted else ""))
            for read in (True, False)
            for noted in (True, False)
        }
        return cls(status, cell(labels.no_title), cell(labels.no_venue), f" **{cell(labels.retracted)}**")


@dataclass(frozen=True, slots=True)
class Table:
    """A category's table in the page's columns, for the file `here`."""

    header: str
    cells: tuple[Callable[[Placement], str], ...]
    seed: tuple[Labels, Words] | None = None  # the seed page's table: one `table_row` call per row

    @classmethod
    def of(cls, labels: Labels, layout: Layout, here: str = PAGE) -> Table:
        words = Words.of(labels)
        columns = layout.columns
        names = [cell(getattr(labels, COLUMN_LABELS[column])) for column in columns]
        header = "| " + " | ".join(names) + " |\n|" + " --- |" * len(columns)
        if columns == COLUMNS and not layout.venue_length and "/" not in here:
            return cls(header, (), (labels, words))
        make: dict[str, Callable[[Placement], str]] = {
            "status": lambda row: words.status[row.status == "read", row.noted],
            "paper": lambda row: (
                (cell(row.title) or words.no_title) + (words.retracted if row.retracted else "")
            ),
            "venue": lambda row: venue_cell(row, words, layout.venue_length),
            "why": lambda row: why_cell(row, labels),
            "links": lambda row: links_cell(row, labels, here),
            "authors": lambda row: authors_cell(row, labels),
            "year": lambda row: cell(row.year),
            "added": lambda row: cell(row.added),
            "cited_by": lambda row: row.cited_by,  # digits only (the processor keeps nothing else)
        }
        return cls(header, tuple(make[column] for column in columns))

    def render(self, rows: Iterator[Placement] | Sequence[Placement]) -> str:
        cells = self.cells
        if self.seed is not None:
            labels, words = self.seed
            body = "\n".join(table_row(row, labels, words) for row in rows)
        else:
            body = "\n".join("| " + " | ".join(make(row) for make in cells) + " |" for row in rows)
        return f"{self.header}\n{body}"


def table_row(row: Placement, labels: Labels, words: Words) -> str:
    # Data that shows nothing (empty, or only spaces and controls) gives way to the page's words.
    # Inline, not venue_cell and why_cell: a 100k-row page runs this once per row.
    title = cell(row.title) or words.no_title
    if row.retracted:
        title += words.retracted
    venue = cell(row.venue) or (f"{words.no_venue} · {cell(row.year)}" if row.year else words.no_venue)
    tags = row.tags
    why = cell(row.why) or (
        (cell(labels.tags + " / ".join(tags)) if len(tags) <= MAX_TAGS_SHOWN else why_cell(row, labels))
        if tags
        else ""
    )
    links = " / ".join(link(label, shown.url, cell) for label, shown in link_labels(row.links, labels))
    return f"| {words.status[row.status == 'read', row.noted]} | {title} | {venue} | {why} | {links} |"


def venue_cell(row: Placement, words: Words, longest: int = 0) -> str:
    venue = row.venue
    if longest and len(venue) > longest:
        venue = shorten(venue, longest)  # a venue, with its year, as long as the longest name allowed
    shown = cell(venue)
    return shown or (f"{words.no_venue} · {cell(row.year)}" if row.year else words.no_venue)


def why_cell(row: Placement, labels: Labels) -> str:
    """The curated why; else the item's tags, at most MAX_TAGS_SHOWN of them, then how many more."""
    if shown := cell(row.why):
        return shown
    if not row.tags:
        return ""
    tags = list(row.tags[:MAX_TAGS_SHOWN])
    if len(row.tags) > MAX_TAGS_SHOWN:
        tags.append(f"+{len(row.tags) - MAX_TAGS_SHOWN}")
    return cell(labels.tags + " / ".join(tags))


def links_cell(row: Placement, labels: Labels, here: str = PAGE) -> str:
    return " / ".join(
        link(label, LinkPlan.rebase(here, shown.url), cell) for label, shown in link_labels(row.links, labels)
    )


def authors_cell(row: Placement, labels: Labels) -> str:
    """The first authors' last names (`Last, First` → `Last`), then `et al.` when there are more."""
    names = [author.partition(", ")[0] for author in row.authors[:MAX_AUTHORS_SHOWN]]
    more = f" {labels.et_al}" if len(row.authors) > MAX_AUTHORS_SHOWN else ""
    return cell(", ".join(names) + more) if names else ""


# Words a long proceedings title can lose and still name its venue: the ordinal and "Proceedings of".
_PROCEEDINGS = re.compile(r"^(?:Proceedings of (?:the )?)?(?:\d+(?:st|nd|rd|th) )?", re.IGNORECASE)


_YEAR_AFTER = re.compile(r" · \d{4}\Z")


def shorten(venue: str, longest: int) -> str:
    """`venue` in at most `longest` characters (its ` · year` kept, and not counted): without a leading
    "Proceedings of the 28th", then cut at a word with `…` (the CSV keeps the whole venue)."""
    year = _YEAR_AFTER.search(venue)
    name, after = (venue[: year.start()], year.group(0)) if year else (venue, "")
    name = _PROCEEDINGS.sub("", name, count=1) or name
    if len(name) > longest:
        cut = name[: longest - 1]
        if " " in cut[longest // 2 :]:
            cut = cut[: cut.rindex(" ")]
        name = cut.rstrip(" ,;:·-/") + "…"
    return name + after


# -- a page per category ---------------------------------------------------------------------------------

CATEGORY_FOLDER = "categories"
# Names Windows gives to devices: no file may be called so, whatever its extension.
_DEVICES = frozenset(
    ["con", "prn", "aux", "nul", *(f"com{n}" for n in range(10)), *(f"lpt{n}" for n in range(10))]
)


def category_files(categories: Sequence[str]) -> dict[str, str]:
    """Each category's page, relative to `exports.dir`: `categories/<name>.md`, the name made of the
    category's letters and digits (any script) joined by `-`, unique in page order (`-2`, `-3`, …), and a
    file name every system takes."""
    files: dict[str, str] = {}
    taken: set[str] = set()
    for category in categories:
        words = re.findall(r"\w+", unicodedata.normalize("NFKC", category).casefold())
        stem = "-".join(words)[:60].strip("-_") or "category"
        if stem in _DEVICES:
            stem += "-"
        name, number = stem, 1
        while name in taken:
            number += 1
            name = f"{stem}-{number}"
        taken.add(name)
        files[category] = f"{CATEGORY_FOLDER}/{name}.md"
    return files


def render_split(
    title: str, description: str, rows: Sequence[Placement], labels: Labels, layout: Layout, plan: LinkPlan
) -> Iterator[Output]:
    """The index page (catalog.md: title, summary, each category with its counts) and a page per category."""
    index = page_top(title, description, rows, labels)
    pages: list[Output] = []
    items = []
    for category, group in groupby(rows, key=lambda row: row.category):
        placed = list(group)
        here = plan.category_pages[category]
        read = sum(row.status == "read" for row in placed)
        counts = line(labels.index_entries.format(entries=len(placed), read=read, unread=len(placed) - read))
        items.append(f"- {link(category, LinkPlan.href(PAGE, here))} — {counts}")
        back = link(title or labels.title, LinkPlan.href(here, PAGE))
        table = Table.of(labels, layout, here)
        text = f"# {heading(category)}\n\n{back} · {summary(placed, labels)}\n\n{table.render(placed)}\n"
        pages.append(Output(PurePosixPath(here), text))
    if items:
        index.append("\n".join(items))
    yield Output(PurePosixPath(PAGE), "\n\n".join(index) + "\n")
    yield from pages


# -- the tags page ---------------------------------------------------------------------------------------


def tag_anchor(tag: str) -> str:
    """A tag's anchor on the tags page: its ASCII letters and digits (readable in a URL) and a digest of
    the whole tag (unique, whatever script it is in, and stable between runs)."""
    readable = "-".join(re.findall(r"[a-z0-9]+", tag.casefold()))[:40].strip("-")
    digest = hashlib.sha256(tag.encode("utf-8")).hexdigest()[:8]
    return f"tag-{readable}-{digest}" if readable else f"tag-{digest}"


def render_tags(title: str, rows: Sequence[Placement], labels: Labels, plan: LinkPlan, here: str) -> str:
    """Each tag with its papers, then each paper (an anchor named by its Zotero key, which
    `exports.archive_link: "tags.md#{key}"` points at) with its categories and tags."""
    papers: dict[str, list[Placement]] = {}  # Zotero key → its rows, in page order
    for row in rows:
        if ZOTERO_KEY.match(row.zotero_key):  # an anchor is only ever a key: data never becomes HTML
            papers.setdefault(row.zotero_key, []).append(row)
    by_tag: dict[str, list[str]] = {}
    for key, placed in papers.items():
        for tag in placed[0].tags:
            by_tag.setdefault(tag, []).append(key)
    title_line = f"{labels.tags_title} · {title}" if title else labels.tags_title
    parts = [
        f"# {heading(title_line)}",
        line(labels.tags_summary.format(tags=len(by_tag), papers=len(papers))),
    ]
    for tag in sorted(by_tag, key=lambda t: (t.casefold(), t)):
        entries = "\n".join(
            f"- {link(papers[key][0].title or labels.no_title, '#' + key)}" for key in by_tag[tag]
        )
        parts.append(f'## <a id="{tag_anchor(tag)}"></a>{heading(tag)}\n\n{entries}')
    listed = []
    for key, placed in papers.items():
        first = placed[0]
        where = " · ".join(
            link(category, _category_href(plan, here, category))
            for category in dict.fromkeys(row.category for row in placed)
        )
        tags = " · ".join(link(tag, "#" + tag_anchor(tag)) for tag in first.tags) or inline(labels.no_tags)
        listed.append(
            f'- <a id="{key}"></a>{inline(first.title) or inline(labels.no_title)} — {where} — {tags}'
        )
    if listed:
        parts.append(f"## {heading(labels.tags_papers)}\n\n" + "\n".join(listed))
    return "\n\n".join(parts) + "\n"


def _category_href(plan: LinkPlan, here: str, category: str) -> str:
    target = plan.category_pages.get(category) or plan.pages.get("md", PAGE)
    return LinkPlan.href(here, target)


# -- the sortable-tables script (vendored tablesort, MIT) -------------------------------------------------

ASSETS = "assets"
# The script files a MkDocs site lists under `extra_javascript`, in order, and the licence beside them.
SCRIPTS = ("tablesort.min.js", "tablesort.number.min.js", "tablesort-init.js")
LICENCE = "tablesort-LICENCE.txt"
# Material's recipe (its docs, "Data tables"): sort every plain table of each page Material shows; a site
# without Material's `document$` sorts once the page is loaded.
INIT_SCRIPT = """\
// Written by zotsync (exports.sortable): make the reading list's tables sortable by any column.
(function () {
  function sortable() {
    document.querySelectorAll("article table:not([class]), .markdown-body table").forEach(function (table) {
      if (!table.hasAttribute("data-sortable")) {
        table.setAttribute("data-sortable", "");
        new Tablesort(table);
      }
    });
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(sortable);
  } else {
    document.addEventListener("DOMContentLoaded", sortable);
  }
})();
"""


def asset_outputs() -> Iterator[Output]:
    vendored = resources.files("zotsync") / "data" / "tablesort"
    for name in SCRIPTS[:2]:
        yield Output(PurePosixPath(ASSETS, name), (vendored / name).read_text(encoding="utf-8"))
    yield Output(PurePosixPath(ASSETS, SCRIPTS[2]), INIT_SCRIPT)
    yield Output(PurePosixPath(ASSETS, LICENCE), (vendored / "LICENCE").read_text(encoding="utf-8"))


def _outputs(given: ExportInput) -> Iterator[Output]:
    page, plan = given.page, given.plan
    if plan.category_pages:
        yield from render_split(page.title, page.description, page.rows, page.labels, page.layout, plan)
    else:
        text = render_markdown(page.title, page.description, page.rows, page.labels, page.layout)
        yield Output(PurePosixPath(EXPORTER.page), text)
    if plan.tags_page:
        yield Output(
            PurePosixPath(plan.tags_page),
            render_tags(page.title, page.rows, page.labels, plan, plan.tags_page),
        )
    if page.layout.sortable:
        yield from asset_outputs()
    if page.layout.suggestions:
        yield Output(
            PurePosixPath(suggestions.PAGE), suggestions.page_of(page.rows, given.library, page.labels)
        )
    yield from notes.outputs(given)


EXPORTER = Exporter(
    name="md",
    summary="the reading list as a Markdown page, one table per category",
    page=PAGE,
    render=_outputs,
    needs=Needs.ZOTERO_LINKS | Needs.NOTES,
)
