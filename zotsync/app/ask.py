"""What `zotsync mcp` answers an assistant: the reading list and the store, read and never written.

Each answer opens the store read-only (SQLite `mode=ro`, `open_store(readonly=True)`): it never creates,
upgrades or writes it, never takes the run lock, and reads under WAL while a `sync` writes, each answer
one consistent read of the store as the last commit left it. The page (the catalogue merged with the
library) is made once and kept while the catalogue's bytes and the store's content generation stay
what they were, so a sync's new data shows in the next answer and an answer costs one page only after
a change.

Every answer is bounded (`limit`, `max_chars`) and says what it left out (`Answer.cut`). What Zotero and
the catalogue hold stays data: it is returned as values, never made part of an instruction.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError, ZotsyncError

if TYPE_CHECKING:
    from .. import searchtext
    from ..config import Config
    from ..export import Page
    from ..model import Item, PaperNotes, Placement
    from ..store import Store
    from ..store.ownindex import OwnIndex
    from ..store.searchindex import Curated, IndexHit
    from .hits import SearchHit

# The store, the catalogue, the page, search and the exporters are imported by the first answer that
# needs them, not at start: `zotsync mcp` answers `initialize` sooner (bench/bench_mcp.py).

log = logging.getLogger("zotsync")

# The caps: the default suits a model's context; the most a caller may ask for.
SEARCH_LIMIT, SEARCH_MOST = 10, 50
LIST_LIMIT, LIST_MOST = 50, 500
PAPER_CHARS, PAPER_MOST = 20_000, 200_000
FULLTEXT_CHARS, FULLTEXT_MOST = 4_000, 50_000
RELATED_LIMIT, RELATED_MOST = 10, 50
STATUSES = ("read", "unread")


class AskError(ConfigError):
    """A question this library cannot answer as asked: an unknown key or category, a bad argument."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A JSON value, and what a cap left out of it (empty when nothing was)."""

    value: object
    cut: str = ""


@dataclass(frozen=True, slots=True)
class _Shelf:
    """The page as made from one catalogue and one state of the store."""

    made_from: tuple[str | None, int, int | None]  # catalogue digest, content generation, library version
    page: Page
    curated: tuple[Curated, ...]  # the catalogue's side of a search index, as the page matched it
    rows_of: dict[str, list[Placement]]  # each Zotero key's rows, in page order


class ReadingList:
    """The reading list and the store of `config`, answered from; safe to share between threads."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._shelf: _Shelf | None = None
        self._lock = threading.Lock()
        self._own: tuple[object, OwnIndex] | None = None  # our own search index, and the page it is of
        self._own_lock = threading.Lock()

    # -- the tools --------------------------------------------------------------------------------------

    def search(self, text: str, limit: int = SEARCH_LIMIT) -> Answer:
        """The hits of `zotsync search --format json`, best first, at most `limit`."""
        limit = _within("limit", limit, SEARCH_MOST)
        from .. import searchtext
        from ..text import MAX_QUERY

        if len(text) > MAX_QUERY:
            raise AskError(f"query is {len(text)} characters long; at most {MAX_QUERY}")
        query = searchtext.parse_query(text)
        if not query.words:
            raise AskError("query has no word to look for (only spaces and punctuation)")
        from .search import hits_of, indexed_hits

        with _read_only(self.config) as store:
            if store.search_index:
                hits = indexed_hits(store, query, limit + 1, self.config.fulltext.enabled)
            else:  # nobody ran `zotsync search` yet, which builds it: an index of our own, in memory
                collections = store.collections()
                hits = hits_of(query, self._own_search(query, limit + 1), collections)
        if self.config.search.semantic:
            hits = self._with_meaning(text, hits, limit + 1)
        cut = ""
        if len(hits) > limit:
            hits = hits[:limit]
            cut = (
                f"the best {limit} hits shown, and more match: "
                f"ask with a higher limit (at most {SEARCH_MOST})"
            )
        return Answer([hit.to_dict() for hit in hits], cut)

    def get_paper(self, key: str, max_chars: int = PAPER_CHARS) -> Answer:
        """One paper: what the page says of it, its abstract, its notes as Markdown and its annotations;
        the abstract, notes and annotations together at most `max_chars` characters."""
        max_chars = _within("max_chars", max_chars, PAPER_MOST)
        shelf = self._current()
        rows = shelf.rows_of.get(key, [])
        with _read_only(self.config) as store, store.one_read():
            item = _paper_item(store, key)
            if not rows and item is None:
                raise AskError(f"no paper with the Zotero key {_shown(key)} in the library")
            notes = store.paper_notes([key])
        paper = _paper(key, rows, item)
        budget = _Budget(max_chars)
        paper["abstract"] = budget.text("abstract", item.get("abstractNote") if item else "")
        found = notes.get(key) or _no_notes()
        labels = shelf.page.labels
        paper["notes"] = budget.text("notes", _notes_markdown(found, labels.image))
        paper["annotations"] = budget.listed("annotations", _annotations(found))
        paper["note_page"] = f"zotsync://notes/{key}" if found else ""
        return Answer(paper, budget.said())

    def list_papers(
        self,
        category: str | None = None,
        status: str | None = None,
        tag: str | None = None,
        year: int | None = None,
        limit: int = LIST_LIMIT,
    ) -> Answer:
        """The page's rows that match every filter given, in page order, at most `limit`."""
        limit = _within("limit", limit, LIST_MOST)
        if status is not None and status not in STATUSES:
            raise AskError(f"status must be read or unread, not {_shown(status)}")
        page_rows = self._current().page.rows
        rows: Iterable[Placement] = page_rows
        if category is not None:
            if category not in {row.category for row in page_rows}:
                raise AskError(f"no category {_shown(category)} on the reading list: `categories` lists them")
            rows = (row for row in rows if row.category == category)
        if status is not None:
            rows = (row for row in rows if row.status == status)
        if tag is not None:
            wanted = tag.casefold()
            rows = (row for row in rows if any(t.casefold() == wanted for t in row.tags))
        if year is not None:
            rows = (row for row in rows if row.year == str(year))
        matched = list(rows)
        cut = ""
        if len(matched) > limit:
            cut = (
                f"{limit} of {len(matched)} rows; narrow by category, status, tag or year, or ask with a "
                f"higher limit (at most {LIST_MOST})"
            )
        return Answer([_row(row) for row in matched[:limit]], cut)

    def categories(self) -> Answer:
        """The page's categories in page order, each with its papers, read and unread."""
        counts: dict[str, dict[str, int]] = {}
        for row in self._current().page.rows:
            count = counts.setdefault(row.category, {"papers": 0, "read": 0, "unread": 0})
            count["papers"] += 1
            count[row.status] += 1
        return Answer([{"name": name, **count} for name, count in counts.items()])

    def get_fulltext(self, key: str, query: str | None = None, max_chars: int = FULLTEXT_CHARS) -> Answer:
        """The paper's PDF text, or its passages around `query`, as the last sync pulled it
        (`fulltext.enabled`); when the config leaves the text out, or the paper has none, it says so."""
        max_chars = _within("max_chars", max_chars, FULLTEXT_MOST)
        self._known(key)
        if not self.config.fulltext.enabled:
            raise AskError(
                "full text is not pulled: fulltext.enabled is off in the config; get_paper gives the "
                "abstract, notes and annotations, and search finds words in them"
            )
        from .fulltext import passages

        with _read_only(self.config) as store:
            texts = store.paper_fulltext(key)
        if not texts:
            raise AskError(
                f"no PDF text in the store for {_shown(key)} (Zotero has not indexed its PDF, or, read from "
                "zotero.sqlite, its cache file is missing)"
            )
        text = "\n\n".join(piece for _, piece in texts)
        if query:
            text = passages(text, query)
            if not text:  # else an assistant could not tell "nothing matches" from "no text"
                raise AskError(
                    f"no passage of the PDF text of {_shown(key)} holds the words of the query; ask without "
                    "a query for the text from its start"
                )
        cut = (
            f"the first {max_chars} characters shown: ask with a query, or a higher max_chars"
            if len(text) > max_chars
            else ""
        )
        answer = {"zotero_key": key, "attachments": [k for k, _ in texts], "text": text[:max_chars]}
        return Answer(answer, cut)

    def _with_meaning(self, text: str, words: list[SearchHit], limit: int) -> list[SearchHit]:
        """The keyword hits fused with the meaning's, as `zotsync search` does by default once search by
        meaning is on; the words alone while it cannot answer (no vector yet, no word the model knows)."""
        from ..errors import StoreError
        from . import meaning

        try:
            near = meaning.semantic(self.config, text, limit * 2)
        except (ConfigError, StoreError) as exc:
            log.debug("search by meaning left out: %s", exc)
            return words
        return meaning.fuse([words, [meaning.as_hit(hit) for hit in near]], limit)

    def related(self, key: str, limit: int = RELATED_LIMIT) -> Answer:
        """The papers closest in meaning to `key` (`zotsync related --format json`), when search by
        meaning is on."""
        _within("limit", limit, RELATED_MOST)
        self._known(key)
        from ..errors import StoreError
        from . import meaning

        try:
            hits = meaning.related(self.config, key, limit)
        except (ConfigError, StoreError) as exc:
            raise AskError(str(exc)) from None
        return Answer([hit.to_dict() for hit in hits])

    # -- the resources ----------------------------------------------------------------------------------

    def note_page(self, key: str) -> str:
        """The paper's note page, as `sync` writes it to notes/<KEY>.md."""
        from ..export.notes import head, page_path, page_text

        shelf = self._current()
        rows = shelf.rows_of.get(key, [])
        found = None
        if rows:
            with _read_only(self.config) as store:
                found = store.paper_notes([key]).get(key)
        if not found:
            raise AskError(f"no note page for the Zotero key {_shown(key)}: no paper on the list with notes")
        why = next((row.why for row in rows if row.why), "")  # the first why, as the note page has it
        labels = shelf.page.labels
        return page_text(head(rows[0]._replace(why=why), page_path(key), labels), found, labels)

    # -- the page, kept while nothing changed ------------------------------------------------------------

    def prepare(self) -> None:
        """Make the page now (in the background, while a client reads the tool list), so that the first
        question does not wait for it; a store or catalogue that cannot be read is said by that question."""
        try:
            self._current()
        except ZotsyncError as exc:
            log.debug("the page is made at the first question: %s", exc)

    def _own_search(self, query: searchtext.Query, limit: int) -> list[IndexHit]:
        """`query` in an index of our own, made from the store read-only (`OwnIndex`) and kept while
        the page is: a reader never builds the store's (that writes it)."""
        from ..store.ownindex import OwnIndex

        shelf = self._current()
        with self._own_lock:
            made_from, index = self._own or (None, None)
            if index is None or made_from != shelf.made_from:
                if index is not None:
                    index.close()
                self._own = None
                index = OwnIndex(self.config.store, shelf.curated)
                self._own = (shelf.made_from, index)
            return index.search(query, limit)

    def _current(self) -> _Shelf:
        from ..catalogue import CatalogueFile
        from .page import merge
        from .search import curated_placements

        catalogue_file = CatalogueFile.read(self.config.catalog, self.config.path)
        with self._lock, _read_only(self.config) as store, store.one_read():
            state = store.sync_state
            made_from = (catalogue_file.digest, state.content_generation, state.library_version)
            shelf = self._shelf
            if shelf is not None and shelf.made_from == made_from:
                return shelf
            catalogue = catalogue_file.load()
            merged = merge(self.config, catalogue, store, links=True, notes_plan=True)
            rows_of: dict[str, list[Placement]] = {}
            for row in merged.page.rows:
                if row.zotero_key:
                    rows_of.setdefault(row.zotero_key, []).append(row)
            curated = tuple(curated_placements(catalogue, merged.reconciliation.matches))
            shelf = _Shelf(made_from, merged.page, curated, rows_of)
            self._shelf = shelf
            return shelf

    def _known(self, key: str) -> None:
        if key in self._current().rows_of:
            return
        with _read_only(self.config) as store:
            item = _paper_item(store, key)
        if item is None:
            raise AskError(f"no paper with the Zotero key {_shown(key)} in the library")


def _read_only(config: Config) -> contextlib.AbstractContextManager[Store]:
    """The store, opened read-only for one answer (`open_store`)."""
    from .stores import open_store

    return open_store(config, readonly=True)


def _paper_item(store: Store, key: str) -> Item | None:
    """The library's paper with the Zotero key `key`: a regular item, not in the trash; else None."""
    item = next(iter(store.items_with_keys([key])), None)
    return item if item is not None and item.is_regular and not item.deleted else None


def _no_notes() -> PaperNotes:
    from ..model import PaperNotes

    return PaperNotes()


def _within(name: str, value: int, most: int) -> int:
    if not 1 <= value <= most:
        raise AskError(f"{name} must be between 1 and {most}, not {value}")
    return value


def _shown(value: str) -> str:
    """A caller's value in an error line: quoted, one line, and short."""
    return repr(value if len(value) <= 60 else value[:60] + "…")


def _row(row: Placement) -> dict[str, object]:
    return {
        "zotero_key": row.zotero_key,
        "title": row.title,
        "category": row.category,
        "status": row.status,
        "venue": row.venue,
        "year": row.year,
        "why": row.why,
        "noted": row.noted,
    }


def _paper(key: str, rows: Sequence[Placement], item: Item | None) -> dict[str, object]:
    """What the page says of the paper (its first row, and every category it is placed in), else what
    Zotero says of an item the page leaves out."""
    first = rows[0] if rows else None
    why = next((row.why for row in rows if row.why), "")
    status: str = ""  # a paper the page leaves out is neither read nor unread there
    if first is not None:
        title, authors, year, venue = first.title, list(first.authors), first.year, first.venue
        doi, url, tags, status = first.doi, first.url, list(first.tags), first.status
    else:
        assert item is not None
        title, year, venue, doi, url = item.title, item.year, "", item.doi, item.url
        authors = [c.display for c in item.creators if c.creator_type == "author"]
        tags = sorted(t.name for t in item.tags)
    return {
        "zotero_key": key,
        "title": title,
        "authors": authors,
        "year": year,
        "venue": venue,
        "doi": doi,
        "url": url,
        "categories": list(dict.fromkeys(row.category for row in rows)),
        "status": status,
        "why": why,
        "tags": tags,
    }


def _notes_markdown(found: PaperNotes, image_word: str) -> str:
    """The paper's child notes as Markdown, oldest first, a rule between two."""
    if not found.notes:
        return ""
    from ..export.mdtext import inline, link
    from ..export.notehtml import note_markdown  # markdownify and BeautifulSoup: only when a paper has notes

    def image(attachment_key: str, src: str) -> str:
        if attachment_key:
            return link(image_word, f"zotero://select/library/items/{attachment_key}")
        return inline(image_word)

    bodies = (note_markdown(note.get("note"), 0, image) for note in found.notes)
    return "\n\n* * *\n\n".join(body for body in bodies if body)


def _annotations(found: PaperNotes) -> list[dict[str, str]]:
    """Each annotation in reading order: its text, comment, page label, kind and colour, and the title
    of the attachment it is made in."""
    return [
        {
            "text": annotation.get("annotationText"),
            "comment": annotation.get("annotationComment"),
            "page": annotation.get("annotationPageLabel"),
            "type": annotation.get("annotationType"),
            "color": annotation.get("annotationColor"),
            "attachment": attachment.title or attachment.get("filename"),
        }
        for attachment, annotations in found.annotated
        for annotation in annotations
    ]


class _Budget:
    """The characters a paper's long fields may still take, and what they had to leave out."""

    def __init__(self, chars: int) -> None:
        self.left = chars
        self.cuts: list[str] = []

    def text(self, name: str, value: str) -> str:
        if len(value) <= self.left:
            self.left -= len(value)
            return value
        kept, self.left = value[: self.left], 0
        self.cuts.append(f"{name}: the first {len(kept)} of {len(value)} characters")
        return kept

    def listed(self, name: str, values: list[dict[str, str]]) -> list[dict[str, str]]:
        kept = []
        for value in values:
            size = sum(len(text) for text in value.values())
            if size > self.left:
                break
            self.left -= size
            kept.append(value)
        if len(kept) < len(values):
            self.cuts.append(f"{name}: the first {len(kept)} of {len(values)}")
        return kept

    def said(self) -> str:
        if not self.cuts:
            return ""
        return "; ".join(self.cuts) + f" (ask with a higher max_chars, at most {PAPER_MOST})"
