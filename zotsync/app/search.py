"""`zotsync search`: full-text search of the store — titles, authors, abstracts, tags, Zotero notes and
annotations, and the curated titles and whys — one hit per paper, best first.

The first search builds the index from the store (a store nobody searches costs its pulls nothing for
it); from then on its Zotero side follows the items in every pull's transaction (store/landing.py). The
catalogue's side (curated titles and whys, and which item each entry matched) changes with the
catalogue and with the library it is matched against, so it is stamped with both: the catalogue's
digest and the store's content generation. A sync that renders the page has just matched them and
writes it then, at no extra cost (`index_catalogue`). A search that finds the stamp outdated (the
catalogue was edited, or a `pull` ran, since the last sync) matches them itself first and writes the
result, under the run lock, so that the next search is fast again; when it may not (another run holds
the lock, the store is read-only for this user) it says so and searches the index as it is.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace

from .. import normalize, searchtext
from ..catalogue import CatalogueFile
from ..config import Config
from ..errors import ConfigError, StoreError
from ..model import Catalogue, Collection, Library
from ..reconcile import UNFILED, MatchResult, match
from ..store import Store, exclusive_lock, searchindex
from ..store.searchindex import Curated, IndexHit
from ..version import __version__
from . import fulltext
from .hits import SearchHit, check_length
from .stores import open_store

log = logging.getLogger("zotsync")

DEFAULT_LIMIT = 20


def search(config: Config, text: str, limit: int = DEFAULT_LIMIT) -> list[SearchHit]:
    """The papers whose text holds every word of `text`, best first, at most `limit` of them."""
    check_length(text)
    query = searchtext.parse_query(text)
    if not query.words:
        raise ConfigError("the search text has no word to look for (only spaces and punctuation)")
    if limit < 1:
        raise ConfigError(f"the limit must be 1 or more, not {limit}")
    catalogue_file = CatalogueFile.read(config.catalog, config.path)
    with open_store(config, readonly=True) as store:
        built = store.search_index
        if built and store.sync_state.search_catalogue == made_from(catalogue_file.digest, store.generation):
            return _found(store, query, limit, config.fulltext.enabled)
    if built:
        _match_catalogue(config, catalogue_file)
    else:
        _build_index(config, catalogue_file)
    with open_store(config, readonly=True) as store:
        return _found(store, query, limit, config.fulltext.enabled)


def made_from(catalogue_digest: str | None, generation: int) -> str:
    """What the catalogue's side of the index is made from: the catalogue's bytes and the library it
    was matched against (and the zotsync that matched them)."""
    return json.dumps({"catalogue": catalogue_digest, "generation": generation, "zotsync": __version__})


def index_catalogue(
    store: Store, catalogue: Catalogue, matches: MatchResult, catalogue_digest: str | None
) -> None:
    """The catalogue's side of the search index, from a matching of `catalogue` against the store's
    library as it is now (a sync's, which has just made one)."""
    store.replace_curated(
        curated_placements(catalogue, matches), made_from(catalogue_digest, store.generation)
    )


def curated_placements(catalogue: Catalogue, matches: MatchResult) -> list[Curated]:
    """Each curated placement with its paper: the key of the item it matched, else its normalised
    title (as the change digest names an unmatched entry)."""
    placements = []
    for entry in catalogue.entries:
        item = matches.item_for(entry)
        paper = item.key if item is not None else f"title:{normalize.title(entry.title)}"
        placements.append(Curated(paper, entry.title, entry.why, entry.category))
    return placements


def _build_index(config: Config, catalogue_file: CatalogueFile) -> None:
    """The first search builds the index, both sides, under the run lock; one that may not (another run
    holds the lock, the store is read-only for this user) fails in one line, as there is nothing to search."""
    if not searchindex.available():
        raise StoreError(searchindex.unavailable())
    catalogue = catalogue_file.load()
    try:
        with exclusive_lock(config.store), open_store(config, must_exist=True) as store:
            log.info("building the search index (once: from now on every pull keeps it current)")
            store.build_search_index()
            _index_matched(store, catalogue, catalogue_file.digest)
    except StoreError as exc:
        raise StoreError(f"cannot build the search index: {exc}") from exc


def _match_catalogue(config: Config, catalogue_file: CatalogueFile) -> None:
    catalogue = catalogue_file.load()  # a catalogue that cannot be read fails the search, as it fails `list`
    try:
        with exclusive_lock(config.store), open_store(config, must_exist=True) as store:
            _index_matched(store, catalogue, catalogue_file.digest)
    except StoreError as exc:
        log.warning(
            "search: cannot bring the catalogue's side of the index up to date (%s): it is searched as the "
            "last sync left it",
            exc,
        )


def _index_matched(store: Store, catalogue: Catalogue, catalogue_digest: str | None) -> None:
    library = store.load_page(creators=False, attachments=False)
    matches = match(catalogue.entries, library.items, library.facts)
    index_catalogue(store, catalogue, matches, catalogue_digest)


def _found(store: Store, query: searchtext.Query, limit: int, texts: bool = True) -> list[SearchHit]:
    hits = store.search(query, limit)
    paths = Library(collections=store.collections()).collection_paths() if hits else {}
    found = [_hit(query, hit, paths) for hit in hits]
    if texts and len(found) < limit:  # the PDFs' text ranks after every match in what the library says
        found += _text_hits(store, query, limit - len(found), [hit.paper for hit in hits])
    return found


def _text_hits(store: Store, query: searchtext.Query, limit: int, skip: Sequence[str]) -> list[SearchHit]:
    """The papers whose attachments' text (`fulltext`) holds every word of `query`, `skip` left out."""
    hits = store.fulltext_search(query.words, limit, skip)
    if not hits:
        return []
    shown = {hit.paper: hit for hit in store.index_entries([hit.paper for hit in hits])}
    paths = Library(collections=store.collections()).collection_paths()
    found = []
    for text_hit in hits:
        entry = shown.get(text_hit.paper)
        if entry is None:
            continue
        hit = _hit(query, entry, paths)
        text = store.fulltext_of(text_hit.attachment) or ""
        found.append(
            replace(hit, where="fulltext", snippet=fulltext.snippet(text, query), fields=["fulltext"])
        )
    return found


def indexed_hits(store: Store, query: searchtext.Query, limit: int, texts: bool = True) -> list[SearchHit]:
    """`search` in the index as the last sync or search left it, writing nothing (for a reader that may
    not bring it up to date: `zotsync mcp`, beside a running sync); `texts`: the PDFs' text too."""
    return _found(store, query, limit, texts)


def hits_of(
    query: searchtext.Query, found: Sequence[IndexHit], collections: Sequence[Collection]
) -> list[SearchHit]:
    """What `search` shows of the papers an index `found` (a reader's own index: `store.ownindex`)."""
    paths = Library(collections=tuple(collections)).collection_paths() if found else {}
    return [_hit(query, hit, paths) for hit in found]


def _hit(query: searchtext.Query, hit: IndexHit, paths: dict[str, str]) -> SearchHit:

    found = searchtext.locate(query, hit.columns)
    curated = hit.curated
    if curated:
        categories: Sequence[str] = list(dict.fromkeys(c.category for c in curated))
    elif hit.zotero_title is not None:
        categories = [paths[key] for key in hit.collections if key in paths] or [UNFILED]
    else:
        categories = []
    return SearchHit(
        zotero_key="" if hit.paper.startswith("title:") else hit.paper,
        title=curated[0].title if curated else hit.zotero_title or "",
        categories=list(categories),
        where=found.where,
        snippet=found.snippet,
        fields=list(found.fields),
    )
