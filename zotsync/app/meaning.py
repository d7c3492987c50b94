"""Search by meaning (`search.semantic`): `zotsync related KEY`, and `search --mode semantic|hybrid`.

The vectors are the ones `sync` keeps in the store (zotsync/processing/meaning.py); a query is embedded
with the same model and compared with all of them at once. Hybrid search fuses the keyword ranking and
the meaning ranking by reciprocal rank fusion (each paper scores the sum of 1 / (60 + its rank)).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..errors import ConfigError, StoreError
from ..text import one_line
from .stores import open_store

log = logging.getLogger("zotsync")

if TYPE_CHECKING:
    from ..processing.meaning import Vectors
    from ..store import Store
    from .hits import SearchHit

MODES = ("keyword", "semantic", "hybrid")
RRF_K = 60  # reciprocal rank fusion's constant, as its authors chose it
DEFAULT_LIMIT = 10
# The least similarity a search by meaning shows. On bench_meaning.py's written set, 25 of the 26
# paraphrases' own papers score at least 0.15 against 5% of the papers of other topics (0.10: 15%): below
# it a hit is noise, which padded every hybrid search to its limit.
SIMILARITY_FLOOR = 0.15
UNFILED = "Unfiled"  # as reconcile names the items in no collection (not imported: it loads the matcher)
TURN_ON = (
    "search by meaning is not on: set `search: {semantic: true}` in the config (and pip install "
    "'.[semantic]' in zotsync's folder), then run `zotsync sync`"
)


class NoVectors(StoreError):
    """Search by meaning is on, but no sync has made a vector yet."""


class UnknownWords(ConfigError):
    """The search text holds no word the model knows (an identifier, a misspelling)."""


@dataclass(frozen=True, slots=True)
class Related:
    """A paper near another in meaning."""

    zotero_key: str
    title: str
    score: float  # cosine similarity, -1 to 1
    categories: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def default_mode(config: Config) -> str:
    return "hybrid" if config.search.semantic else "keyword"


def _check_on(config: Config, model: bool = True) -> None:
    """Search by meaning is on, and its model is installed (read it only when a text is to be embedded:
    `related` compares stored vectors alone)."""
    if not config.search.semantic:
        raise ConfigError(TURN_ON)
    from ..embed import HOW_TO_INSTALL, ModelMissing, available, installed

    try:
        installed()
    except ModelMissing as exc:
        raise ConfigError(str(exc)) from None
    if model and not available():
        raise ConfigError(f"search by meaning cannot read the WordLlama model's files: {HOW_TO_INSTALL}")


# The last vectors read, by store and what they were read from: a program that asks again (the Python
# API, `zotsync mcp`) compares the query with a matrix already in memory.
_cached: dict[str, tuple[object, Vectors]] = {}


def _vectors(store: Store) -> Vectors:
    from ..processing.meaning import Vectors

    stamp = store.vectors_made()
    cached = _cached.get(str(store.path))
    if cached is not None and stamp is not None and cached[0] == stamp:
        vectors = cached[1]
    else:
        vectors = Vectors.of(store)
        _cached.clear()
        _cached[str(store.path)] = (stamp, vectors)
    if not vectors.keys:
        raise NoVectors("no paper has a vector of meaning yet: run `zotsync sync` (search.semantic is on)")
    return vectors


def _nearest(vectors: Vectors, query: Any, limit: int) -> list[tuple[str, float]]:
    """The papers whose vectors are nearest to `query` (cosine), best first."""
    from ..processing.meaning import best

    scores = vectors.products(query)
    return [(vectors.keys[i], float(scores[i])) for i in best(scores, limit)]


def related(config: Config, key: str, limit: int = DEFAULT_LIMIT) -> list[Related]:
    """The papers of the library nearest in meaning to the paper `key`, best first, never `key`."""
    _check_on(config, model=False)
    if limit < 1:
        raise ConfigError(f"the limit must be 1 or more, not {limit}")
    with open_store(config, readonly=True) as store:
        vectors = _vectors(store)
        if vectors.index(key) is None:
            raise ConfigError(f"no paper with the Zotero key {one_line(key)!r} has a vector of meaning")
        return _described(store, vectors.related(key, limit))


def semantic(config: Config, text: str, limit: int) -> list[Related]:
    """The papers nearest in meaning to `text`, best first, none below SIMILARITY_FLOOR."""
    _check_on(config)
    from ..embed import embed_one

    query = embed_one(text)
    if not query.any():
        raise UnknownWords("the search text has no word the model knows")
    with open_store(config, readonly=True) as store:
        near = _nearest(_vectors(store), query, limit)
        return _described(store, [(key, score) for key, score in near if score >= SIMILARITY_FLOOR])


def _described(store: Store, found: Sequence[tuple[str, float]]) -> list[Related]:
    """Each key with its title and categories, as the keyword search shows them: a curated paper's
    categories (the catalogue as the last sync indexed it), else its collection paths."""
    from ..model import Collection, Library

    keys = [key for key, _ in found]
    items = {item.key: item for item in store.items_with_keys(keys)}
    curated = {
        hit.paper: list(dict.fromkeys(c.category for c in hit.curated))
        for hit in store.index_entries(keys)
        if hit.curated
    }
    by_key = {c.key: c for c in store.collections()} if found else {}
    # the paths of the hits' collections alone: a library may have tens of thousands
    wanted: dict[str, Collection] = {}
    for paper in items.values():
        for collection in paper.collections:
            while collection in by_key and collection not in wanted:
                wanted[collection] = by_key[collection]
                collection = by_key[collection].parent_key or ""
    paths = Library(collections=tuple(wanted.values())).collection_paths()
    hits = []
    for key, score in found:
        item = items.get(key)
        title = item.title if item is not None else ""
        collections = list(item.collections) if item is not None else []
        categories = curated.get(key) or [paths[c] for c in collections if c in paths] or [UNFILED]
        hits.append(Related(key, title, round(score, 4), categories))
    return hits


def search(config: Config, text: str, limit: int, mode: str) -> list[SearchHit]:
    """`zotsync search --mode`: keyword (every word must occur), semantic, or both fused."""
    if mode not in MODES:
        raise ConfigError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "keyword":
        from .search import search as keyword

        return keyword(config, text, limit)
    from .hits import check_length

    check_length(text)
    if limit < 1:
        raise ConfigError(f"the limit must be 1 or more, not {limit}")
    words: list[SearchHit] = []
    if mode != "semantic":
        from .search import search as keyword

        # The words first: a first search builds the index, whose catalogue side names the categories
        # of the meaning's hits too. No word to look for: the meaning alone.
        with contextlib.suppress(ConfigError):
            words = keyword(config, text, limit * 2)
    try:
        near = semantic(config, text, limit if mode == "semantic" else limit * 2)
    except UnknownWords:
        if mode == "semantic":
            raise
        near = []  # the words alone may still be found
    except (NoVectors, ConfigError) as exc:
        # Hybrid, the default once search.semantic is on, must not take the plain search away while
        # the meaning half cannot run (no sync since it was turned on, the model's package missing).
        if mode == "semantic" or not config.search.semantic:
            raise
        log.warning("searching by words alone (%s)", exc)
        near = []
    as_hits = [as_hit(hit) for hit in near]
    return as_hits if mode == "semantic" else fuse([words, as_hits], limit)


def as_hit(hit: Related) -> SearchHit:
    """A meaning hit as a search hit (`where` is `meaning`, the snippet its similarity)."""
    from .hits import SearchHit

    return SearchHit(hit.zotero_key, hit.title, hit.categories, "meaning", f"similarity {hit.score:.2f}", [])


def fuse(rankings: Sequence[Sequence[SearchHit]], limit: int) -> list[SearchHit]:
    """Reciprocal rank fusion: a paper's score is the sum over the rankings of 1 / (RRF_K + rank); ties
    keep the first ranking's order. The first ranking's hit (its snippet) is the one shown."""
    scores: dict[str, float] = {}
    shown: dict[str, SearchHit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, 1):
            paper = hit.zotero_key or f"title:{hit.title}"
            scores[paper] = scores.get(paper, 0.0) + 1 / (RRF_K + rank)
            shown.setdefault(paper, hit)
    order = sorted(scores, key=lambda paper: -scores[paper])
    return [shown[paper] for paper in order[:limit]]


def format_related(hit: Related) -> str:
    categories = f"  [{one_line('; '.join(hit.categories))}]" if hit.categories else ""
    return f"{hit.zotero_key}  {hit.score:.2f}  {one_line(hit.title)}{categories}"
