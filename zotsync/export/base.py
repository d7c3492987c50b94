"""What every exporter is given: the page, the library it was made from, and the plan of files."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..formats import Exporter, Output
from ..labels import COLUMNS, Labels, labels_for
from ..model import Library, Link, Placement

if TYPE_CHECKING:
    from ..digest import News


@dataclass(frozen=True, slots=True)
class Layout:
    """How the Markdown page lays its rows out (`exports.columns`, `venue_length`, `sortable`)."""

    columns: tuple[str, ...] = COLUMNS  # the seed page's five
    venue_length: int = 0  # the longest venue shown whole; 0: every venue whole
    sortable: bool = False  # also write the sortable-tables script for a MkDocs site
    zotero_links: str = "local"  # `exports.zotero_links`: only `local` puts zotero:// links on note pages
    suggestions: bool = False  # `exports.suggestions_page`: also write suggestions.md


@dataclass(frozen=True, slots=True)
class Page:
    """The merged catalogue as the page shows it: its title, description and rows in page order."""

    title: str
    description: str
    rows: Sequence[Placement]
    labels: Labels = field(default_factory=labels_for)  # the page's own words
    layout: Layout = field(default_factory=Layout)
    # The whole library's rows under the page's exclusions, for catalog.bib (`exports.bib_scope: library`);
    # None: catalog.bib holds the page's papers.
    library_rows: Sequence[Placement] | None = None


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True, slots=True)
class Site:
    """Where the exports are read, which decides the address of a Markdown page: a plain folder or
    GitHub show `notes/KEY.md` at that path; MkDocs publishes it as `notes/KEY/` (directory URLs) or
    `notes/KEY.html`. A Markdown page's own `.md` links are right everywhere (MkDocs rewrites them); a
    file the site serves as it is (catalog.html, feed.xml) must name the address itself."""

    kind: str = "folder"  # folder | mkdocs
    directory_urls: bool = True  # MkDocs' use_directory_urls
    url: str = ""  # the absolute URL exports.dir is published at, ending in `/`; "" when not known

    def address(self, path: str) -> str:
        """The address, relative to `exports.dir`, at which the site serves the file `path` (relative
        to `exports.dir`); `./` for the folder's own index page."""
        if self.kind != "mkdocs" or not path.endswith(".md"):
            return path
        stem = path[: -len(".md")]
        if not self.directory_urls:
            return stem + ".html"
        folder, name = posixpath.split(stem)
        if name == "index":
            return folder + "/" if folder else "./"
        return stem + "/"


@dataclass(frozen=True, slots=True)
class LinkPlan:
    """Where each file of an export lives, relative to `exports.dir`, decided before any exporter runs,
    so that a page can link to what another exporter writes (and every link resolves: `href` makes it
    relative to the file it is written in, as a static site and GitHub both read it). The plan is made
    once per export from the config and the library, and every exporter gets the same one."""

    pages: Mapping[str, str] = field(default_factory=dict)  # format name → its page file
    notes: Mapping[str, str] = field(default_factory=dict)  # item key → its note page, when there is one
    tags_page: str = ""  # the tags page, when one is written
    category_pages: Mapping[str, str] = field(default_factory=dict)  # category → its page (a split page)
    site: Site = field(default_factory=Site)  # where the files are read (the addresses of Markdown pages)

    @staticmethod
    def href(source: str, target: str, anchor: str = "") -> str:
        """The link from the file `source` to `target` (both relative to `exports.dir`)."""
        folder = posixpath.dirname(source) or "."
        relative = posixpath.relpath(target, folder) if target else ""
        if target.endswith("/"):  # a folder's address keeps its slash (`notes/KEY/`, `./`)
            relative = relative.rstrip("/") + "/"
        return relative + (f"#{anchor}" if anchor else "")

    @classmethod
    def rebase(cls, source: str, link: str) -> str:
        """A link a row holds, written for a page at the top of `exports.dir` (a curator's `notes/x.md`,
        an `archive_link`, a note page), as the file `source` must write it. Links with a scheme, a
        leading `/` or only an anchor are the same from anywhere."""
        if "/" not in source:
            return link
        return cls._relink(source, link, lambda target: target)

    def served(self, source: str, link: str) -> str:
        """A link a row holds (written for a page at the top of `exports.dir`) as the file `source`
        must write it when the site serves that file as it is (catalog.html, feed.xml): to the address
        the site gives a Markdown page (`tags.md#KEY` → `tags/#KEY` on MkDocs)."""
        return self._relink(source, link, self.site.address)

    @classmethod
    def _relink(cls, source: str, link: str, address: Callable[[str], str]) -> str:
        """`link` (relative to `exports.dir`) from the file `source`, its path taken to `address(path)`;
        its query and anchor kept. Links with a scheme, a leading `/` or only an anchor are as they are."""
        if not link or link.startswith(("#", "/", "?")) or _SCHEME.match(link):
            return link
        path, mark, rest = link.partition("#")
        path, query, params = path.partition("?")
        target = posixpath.normpath(path) + ("/" if path.endswith("/") else "")
        return cls.href(source, address(target)) + query + params + mark + rest

    def absolute(self, path: str) -> str:
        """The URL of the file `path` (relative to `exports.dir`) on the site, when the site's URL is
        known; else "" ."""
        if not self.site.url:
            return ""
        address = self.site.address(path)
        return self.site.url + ("" if address == "./" else address)


@dataclass(frozen=True, slots=True)
class ExportInput:
    """An exporter's input: the page rows, the library (with what the exporter `needs`), the plan, and
    the feed's entries (what recent syncs added to the page or saw read, newest first)."""

    page: Page
    library: Library = field(default_factory=Library)
    plan: LinkPlan = field(default_factory=LinkPlan)
    feed: Sequence[News] = ()
    # Files the last export wrote that are still as it left them, and what each was made from (path
    # relative to `exports.dir` → made_from): an exporter that would make one from the same again may
    # yield it `kept` instead of making it (a note page whose head is the same and whose notes did not
    # change since: the library then holds no notes for it).
    unchanged: Mapping[str, str] = field(default_factory=dict)
    # Each note page's head (path → head, `notes.heads`), when the use case made them already to know
    # which notes to read: made once, not again by the exporter.
    note_heads: Mapping[str, str] | None = None


def link_labels(links: Sequence[Link], labels: Labels) -> list[tuple[str, Link]]:
    """Each link with the label the page shows: a curator's own as written, the ones zotsync added in
    the page's words (the second PDF is `PDF2`, …)."""
    words = {
        "paper": labels.link_paper,
        "zotero": labels.link_zotero,
        "archive": labels.link_archive,
        "note": labels.link_note,
        "open": labels.link_open,
    }
    shown, pdfs = [], 0
    for each in links:
        if each.kind == "pdf":
            pdfs += 1
            shown.append((labels.link_pdf + (str(pdfs) if pdfs > 1 else ""), each))
        else:
            shown.append((words.get(each.kind, each.label), each))
    return shown


def page_text(exporter: Exporter, given: ExportInput) -> str:
    """The exporter's page alone (what `export --output` writes): its first output's text."""
    first: Output = next(iter(exporter.render(given)))
    return first.str_text
