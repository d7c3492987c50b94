"""The search index: one row per paper in two FTS5 tables, built by the first search (`create`, `rebuild`),
then kept in step with `items` by every pull (in its transaction) and with the catalogue by
`replace_curated`.

A paper is a regular item that is not in the trash, with the text of its child notes and of the
annotations on its attachments; or a curated entry that matches no item. `search_index` (trigram
tokenizer) holds each paper's fields as text and finds words of three characters or more;
`search_short` holds what one- and two-character words match (searchtext.py says why two). Both share
`search_papers.id` as their rowid. `search_curated` is the catalogue's side: each curated placement's
paper, title, why and category, as the last sync (or search) that read the catalogue matched it.
"""

from __future__ import annotations

import functools
import itertools
import json
import operator
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from .. import searchtext
from ..model import CHILD_TYPES
from .codec import from_json

INDEX, SHORT = "search_index", "search_short"
_FTS_SHADOWS = ("data", "idx", "content", "docsize", "config")
TABLES = frozenset(
    {"search_papers", "search_curated", INDEX, SHORT}
    | {f"{table}_{shadow}" for table in (INDEX, SHORT) for shadow in _FTS_SHADOWS}
)
CURATED_STATE = "search_catalogue"  # sync_state: what the catalogue side was made from (see app/search.py)
_COLUMNS = ", ".join(searchtext.COLUMNS)
_MARKS = ", ".join("?" * len(searchtext.COLUMNS))
_WEIGHTS = ", ".join(map(str, searchtext.WEIGHTS))
_BATCH = 500  # papers per statement or executemany


@functools.cache
def available() -> bool:
    """Whether this Python's SQLite has FTS5 and its trigram tokenizer (SQLite 3.34 or later)."""
    try:
        probe = sqlite3.connect(":memory:")
        try:
            probe.execute("CREATE VIRTUAL TABLE probe USING fts5(x, tokenize = 'trigram')")
        finally:
            probe.close()
    except sqlite3.Error:
        return False
    return True


def unavailable() -> str:
    return (
        f"this Python's SQLite ({sqlite3.sqlite_version}) has no FTS5 trigram tokenizer (SQLite 3.34 or "
        "later), which search needs"
    )


def exists(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (INDEX,)).fetchone() is not None


def create(db: sqlite3.Connection) -> None:
    """The tables, empty."""
    db.execute(
        "CREATE TABLE search_papers ("
        " id INTEGER PRIMARY KEY,"
        " paper TEXT NOT NULL UNIQUE)"  # a Zotero key, or title:<normalised title> of an unmatched entry
    )
    db.execute(
        "CREATE TABLE search_curated ("
        " position INTEGER PRIMARY KEY,"  # the placement's place in the catalogue
        " paper TEXT NOT NULL, title TEXT NOT NULL, why TEXT NOT NULL, category TEXT NOT NULL)"
    )
    db.execute("CREATE INDEX search_curated_paper ON search_curated (paper)")
    db.execute(f"CREATE VIRTUAL TABLE {INDEX} USING fts5({_COLUMNS}, tokenize = 'trigram')")
    db.execute(
        f"CREATE VIRTUAL TABLE {SHORT} USING fts5({_COLUMNS}, tokenize = 'unicode61 remove_diacritics 0')"
    )


# -- the Zotero side --------------------------------------------------------------------------------------

# Every item with the paper it belongs to (itself, its parent, or its parent's parent: an annotation
# hangs from an attachment) and what it adds to the paper's text. Attachments add none; what is in the
# trash, or below something in the trash, adds none either.
_MEMBERS = """
    SELECT coalesce(g.key, p.key, i.key) AS paper, i.key, i.item_type, i.parent_key, i.title, i.creators,
        i.tags, CASE i.item_type
            WHEN 'note' THEN json_extract(i.fields, '$.note')
            WHEN 'annotation' THEN json_extract(  -- one parse of the fields: a JSON list of the three
                i.fields, '$.annotationText', '$.annotationComment', '$.annotationSortIndex')
            ELSE json_extract(i.fields, '$.abstractNote') END
    FROM {source}
    LEFT JOIN items p ON p.key = i.parent_key LEFT JOIN items g ON g.key = p.parent_key
    WHERE i.deleted = 0 AND coalesce(p.deleted, 0) = 0 AND coalesce(g.deleted, 0) = 0
        AND i.item_type != 'attachment'
    ORDER BY paper, i.key
"""
_ALL_MEMBERS = _MEMBERS.format(source="items i")
# The members of the papers in a JSON list: each paper, its children, and its children's children.
_MEMBERS_OF = _MEMBERS.format(
    source="""(
        WITH wanted(key) AS (SELECT value FROM json_each(?)),
        children(key) AS (SELECT c.key FROM wanted w CROSS JOIN items c ON c.parent_key = w.key)
        SELECT key FROM wanted
        UNION SELECT key FROM children
        UNION SELECT a.key FROM children c CROSS JOIN items a ON a.parent_key = c.key
    ) m JOIN items i ON i.key = m.key"""  # CROSS JOIN: from the papers down, through the index on parent_key
)
# The paper of each item key in a JSON list that the store holds.
_PAPER_OF = """
    SELECT coalesce(g.key, p.key, i.key) FROM items i
    LEFT JOIN items p ON p.key = i.parent_key LEFT JOIN items g ON g.key = p.parent_key
    WHERE i.key IN (SELECT value FROM json_each(?))
"""


class ZoteroText(NamedTuple):
    title: str
    authors: str
    tags: str
    abstract: str
    notes: str
    annotations: str


def _zotero_text(rows: Iterable[tuple[Any, ...]]) -> ZoteroText | None:
    """A paper's text from its members' rows; None when the paper is no regular item in the store."""
    top: tuple[Any, ...] | None = None
    notes: list[str] = []
    annotations: list[tuple[str, str, str, str]] = []
    for row in rows:
        paper, key, item_type, parent, _, _, _, own = row
        if key == paper:
            if parent is None and item_type not in CHILD_TYPES:
                top = row
        elif item_type == "note":
            notes.append(searchtext.note_text(own if isinstance(own, str) else ""))
        elif item_type == "annotation":
            text, comment, sort_index = (str(v or "") for v in from_json(own))
            piece = " — ".join(part for part in (text, comment) if part.strip())
            annotations.append((parent or "", sort_index, key, piece))
    if top is None:
        return None
    _, _, _, _, title, creators, tags, abstract = top
    return _paper_text(
        title,
        ((last, first, name) for _, last, first, name in from_json(creators)),
        (tag for tag, _ in from_json(tags)),
        abstract,
        notes,
        (piece for *_, piece in sorted(annotations)),
    )


def _paper_text(
    title: str,
    creators: Iterable[tuple[str, str, str]],
    tags: Iterable[str],
    abstract: object,
    notes: Iterable[str] = (),
    annotations: Iterable[str] = (),
) -> ZoteroText:
    """A paper's text: creators as (last, first, name), annotations in reading order."""
    return ZoteroText(
        searchtext.clean(title),
        _listed(name or f"{first} {last}".strip() for last, first, name in creators),
        _listed(tags),
        searchtext.clean(abstract if isinstance(abstract, str) else ""),
        searchtext.join(notes),
        searchtext.join(annotations),
    )


def _listed(names: Iterable[str]) -> str:
    return "; ".join(name for name in map(searchtext.clean, names) if name)


def _columns(zotero: ZoteroText | None, curated: Sequence[tuple[str, str]]) -> tuple[str, ...] | None:
    """A paper's fields in the index's column order; None when it is neither in Zotero nor curated."""
    if zotero is None and not curated:
        return None
    titles = [zotero.title] if zotero else []
    titles += [t for t in dict.fromkeys(searchtext.clean(title) for title, _ in curated) if t not in titles]
    why = searchtext.join(dict.fromkeys(why for _, why in curated))
    if zotero is None:
        columns: tuple[str, ...] = (searchtext.PIECES.join(titles), "", "", "", why, "", "")
    else:
        columns = (searchtext.PIECES.join(titles), zotero.authors, zotero.tags, zotero.abstract, why,
                   zotero.notes, zotero.annotations)  # fmt: skip
    return tuple(map(searchtext.with_folded, columns))


def _curated(db: sqlite3.Connection, papers: Sequence[str] | None = None) -> dict[str, list[tuple[str, str]]]:
    """paper → the (title, why) of its curated placements, in catalogue order."""
    if papers is None:
        rows = db.execute("SELECT paper, title, why FROM search_curated ORDER BY position")
    else:
        rows = db.execute(
            "SELECT paper, title, why FROM search_curated"
            " WHERE paper IN (SELECT value FROM json_each(?)) ORDER BY position",
            (json.dumps(list(papers)),),
        )
    found: dict[str, list[tuple[str, str]]] = {}
    for paper, title, why in rows:
        found.setdefault(paper, []).append((title, why))
    return found


def clear(db: sqlite3.Connection) -> None:
    """No paper's row (the catalogue's side stays)."""
    for table in ("search_papers", INDEX, SHORT):
        db.execute(f"DELETE FROM {table}")


def rebuild(db: sqlite3.Connection) -> None:
    """Every paper's row anew from `items` and `search_curated` (a new index): one ordered scan, rows
    written in batches."""
    clear(db)
    curated = _curated(db)

    def rows() -> Iterator[tuple[str, tuple[str, ...] | None]]:
        for paper, group in itertools.groupby(db.execute(_ALL_MEMBERS), operator.itemgetter(0)):
            yield paper, _columns(_zotero_text(group), curated.pop(paper, ()))
        for paper, placements in list(curated.items()):  # curated entries no item in the store stands for
            yield paper, _columns(None, placements)

    ids = itertools.count(1)
    found = ((next(ids), paper, columns) for paper, columns in rows() if columns is not None)
    while batch := list(itertools.islice(found, _BATCH)):
        _insert(db, batch)


def update(db: sqlite3.Connection, touched: Iterable[str]) -> None:
    """The rows of every paper the item keys `touched` belong to (or belonged to: a pull passes the old
    parent of an item it moved or removed too), made anew from the store as it is now."""
    papers: set[str] = set()
    for chunk in _chunks(sorted(set(touched))):
        listed = json.dumps(chunk)
        papers.update(paper for (paper,) in db.execute(_PAPER_OF, (listed,)))
        # a paper the pull removed: no item left to find it by, but its row goes
        papers.update(
            paper
            for (paper,) in db.execute(
                "SELECT paper FROM search_papers WHERE paper IN (SELECT value FROM json_each(?))", (listed,)
            )
        )
    refresh(db, papers)


def refresh(db: sqlite3.Connection, papers: Iterable[str]) -> None:
    """The rows of `papers` made anew; a row whose text is unchanged is left as it is."""
    for chunk in _chunks(sorted(set(papers))):
        wanted = set(chunk)
        rows = db.execute(_MEMBERS_OF, (json.dumps(chunk),)).fetchall()
        zotero = {
            paper: _zotero_text(group)
            for paper, group in itertools.groupby(rows, operator.itemgetter(0))
            if paper in wanted
        }
        curated = _curated(db, chunk)
        ids = dict(
            db.execute(
                "SELECT paper, id FROM search_papers WHERE paper IN (SELECT value FROM json_each(?))",
                (json.dumps(chunk),),
            )
        )
        inserts = []
        next_id = db.execute("SELECT coalesce(max(id), 0) + 1 FROM search_papers").fetchone()[0]
        for paper in chunk:
            columns = _columns(zotero.get(paper), curated.get(paper, ()))
            paper_id = ids.get(paper)
            if paper_id is not None:
                if columns is not None and _stored(db, paper_id) == columns:
                    continue
                _delete(db, paper_id)
                if columns is None:
                    db.execute("DELETE FROM search_papers WHERE id = ?", (paper_id,))
                    continue
            elif columns is None:
                continue
            else:
                paper_id, next_id = next_id, next_id + 1
            inserts.append((paper_id, paper, columns))
        _insert(db, inserts)


def _chunks(keys: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(keys), _BATCH):
        yield list(keys[start : start + _BATCH])


def _stored(db: sqlite3.Connection, paper_id: int) -> tuple[str, ...] | None:
    row = db.execute(f"SELECT {_COLUMNS} FROM {INDEX} WHERE rowid = ?", (paper_id,)).fetchone()
    return None if row is None else tuple(row)


def _delete(db: sqlite3.Connection, paper_id: int) -> None:
    db.execute(f"DELETE FROM {INDEX} WHERE rowid = ?", (paper_id,))
    db.execute(f"DELETE FROM {SHORT} WHERE rowid = ?", (paper_id,))


def _insert(db: sqlite3.Connection, rows: Sequence[tuple[int, str, tuple[str, ...]]]) -> None:
    db.executemany("INSERT OR REPLACE INTO search_papers VALUES (?, ?)", ((i, paper) for i, paper, _ in rows))
    db.executemany(
        f"INSERT INTO {INDEX} (rowid, {_COLUMNS}) VALUES (?, {_MARKS})", ((i, *c) for i, _, c in rows)
    )
    db.executemany(
        f"INSERT INTO {SHORT} (rowid, {_COLUMNS}) VALUES (?, {_MARKS})",
        ((i, *map(searchtext.short_terms, c)) for i, _, c in rows),
    )


# -- the catalogue side -----------------------------------------------------------------------------------


class Curated(NamedTuple):
    """A curated placement as search knows it: its paper (the key of the item it matched, else
    `title:` and its normalised title), its title, why and category."""

    paper: str
    title: str
    why: str
    category: str


def replace_curated(db: sqlite3.Connection, placements: Sequence[Curated]) -> None:
    """The catalogue's side replaced with `placements`; the rows of the papers whose curated titles or
    whys changed are made anew (a category is read when a search shows it)."""
    old = [Curated(*row) for row in db.execute("SELECT paper, title, why, category FROM search_curated")]
    if old == list(placements):
        return
    before, after = _texts(old), _texts(placements)
    db.execute("DELETE FROM search_curated")
    db.executemany(
        "INSERT INTO search_curated VALUES (?, ?, ?, ?, ?)", ((n, *p) for n, p in enumerate(placements))
    )
    refresh(db, {paper for paper in before.keys() | after.keys() if before.get(paper) != after.get(paper)})


def _texts(placements: Iterable[Curated]) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for placement in placements:
        found.setdefault(placement.paper, []).append((placement.title, placement.why))
    return found


# -- searching --------------------------------------------------------------------------------------------


class IndexHit(NamedTuple):
    """A paper a query found, with what a hit shows of it."""

    paper: str
    score: float  # bm25: lower is better
    columns: tuple[str, ...]  # its fields, in searchtext.COLUMNS order
    zotero_title: str | None  # None: no item in the store
    collections: tuple[str, ...]  # the item's collection keys
    curated: tuple[Curated, ...]  # its curated placements, in catalogue order


# The ranking's groups, best first: the columns that must hold every word of a query for a paper to be
# in the group (a paper is in the first group it qualifies for; the rest form the last, None: any
# column). Within a group, bm25 orders. Without them, 124 papers tagged 张量编译 outranked the one with
# 张量 in its title.
TIERS = ("{title}", "{why notes annotations}", None)


def search(db: sqlite3.Connection, query: searchtext.Query, limit: int) -> list[IndexHit]:
    """The best `limit` papers for `query`, best first: those whose title holds every word, then those
    whose why, notes or annotations do, then the rest (TIERS); bm25 (weighted by field; both indexes'
    scores summed when both take part) within each.

    One query a group, the next only when the groups before it held fewer than `limit` papers: then
    each of their papers is found already, and the next group's query leaves them out. A common word
    fills the first group and costs one query; a rare one costs three small ones."""
    found: list[tuple[int, float]] = []
    for columns in TIERS:
        seen = json.dumps([paper_id for paper_id, _ in found])
        found += _tier(db, query, columns, limit - len(found), seen)
        if len(found) >= limit:
            break
    return [_entry(db, paper_id, score) for paper_id, score in found]


def _tier(
    db: sqlite3.Connection, query: searchtext.Query, columns: str | None, limit: int, seen: str
) -> list[tuple[int, float]]:
    """The best `limit` papers whose `columns` hold every word of `query`, but those of `seen` (a JSON
    list of ids), with their scores."""
    parts = [(table, words) for table, words in ((INDEX, query.long), (SHORT, query.short)) if words]
    # Each MATCH is answered once (MATERIALIZED), then the sets are joined: a join of the MATCHes
    # themselves ran the inner one for each row of the outer (seconds at 100k papers).
    ctes, params = [], []
    for n, (table, words) in enumerate(parts):
        ctes.append(
            f"m{n} AS MATERIALIZED (SELECT rowid, bm25({table}, {_WEIGHTS}) AS score FROM {table}"
            f" WHERE {table} MATCH ?)"
        )
        params.append(words if columns is None else f"{columns} : ({words})")
    joins = " ".join(f"JOIN m{n} ON m{n}.rowid = m0.rowid" for n in range(1, len(parts)))
    score = " + ".join(f"m{n}.score" for n in range(len(parts)))
    sql = (
        f"WITH {', '.join(ctes)} SELECT m0.rowid, {score} AS score FROM m0 {joins}"
        " WHERE m0.rowid NOT IN (SELECT value FROM json_each(?)) ORDER BY score, m0.rowid LIMIT ?"
    )
    return [(row[0], row[1]) for row in db.execute(sql, (*params, seen, limit))]


def _entry(db: sqlite3.Connection, paper_id: int, score: float) -> IndexHit:
    (paper,) = db.execute("SELECT paper FROM search_papers WHERE id = ?", (paper_id,)).fetchone()
    item = db.execute("SELECT title, collections FROM items WHERE key = ?", (paper,)).fetchone()
    curated = db.execute(
        "SELECT paper, title, why, category FROM search_curated WHERE paper = ? ORDER BY position",
        (paper,),
    )
    return IndexHit(
        paper,
        score,
        _stored(db, paper_id) or ("",) * len(searchtext.COLUMNS),
        item[0] if item else None,
        tuple(from_json(item[1])) if item else (),
        tuple(Curated(*row) for row in curated),
    )


def entries(db: sqlite3.Connection, papers: Sequence[str]) -> list[IndexHit]:
    """The index's rows of `papers` (those it holds), as hits with no score."""
    rows = db.execute(
        "SELECT id FROM search_papers WHERE paper IN (SELECT value FROM json_each(?))",
        (json.dumps(list(papers)),),
    ).fetchall()
    return [_entry(db, paper_id, 0.0) for (paper_id,) in rows]


def papers(db: sqlite3.Connection) -> Mapping[str, tuple[str, ...]]:
    """Every paper in the index with its fields (for tests and checks: what the index holds)."""
    return {
        paper: tuple(row)
        for paper, *row in db.execute(
            f"SELECT p.paper, {', '.join('s.' + c for c in searchtext.COLUMNS)}"
            f" FROM search_papers p JOIN {INDEX} s ON s.rowid = p.id"
        )
    }
