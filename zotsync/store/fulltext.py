"""The attachments' full text (Zotero's full-text index) in the store: each text zlib-compressed in
`fulltext`, and its words in `fulltext_index`, a contentless FTS5 table (the text is not kept twice).

The index is word-level (`unicode61`, diacritics folded: `muller` finds "Müller"), not the trigram index
the metadata uses: over hundreds of MB of text a trigram index is several times the text's size. Runs
of a script written without spaces (Chinese, Japanese, Korean, …) are indexed as their character bigrams
and last character, as the metadata's short index holds them (searchtext.py), so `张量` is found inside
`张量编译器`. A contentless table deletes a row by being given its indexed text again: that text is made
from the stored one (`_body`), so the two never disagree.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from .. import searchtext
from ..model import FullText

TEXT, INDEX = "fulltext", "fulltext_index"
TABLES = frozenset({TEXT, INDEX} | {f"{INDEX}_{shadow}" for shadow in ("data", "idx", "docsize", "config")})
CURSOR_STATE = "fulltext_cursor"  # sync_state: the source and library version the texts were listed at
MAX_CHARS = 8 * 2**20  # of one text kept: past it, a text is cut (Zotero's own limit is far below)

_UNSPACED_RUN = re.compile(f"[{searchtext.UNSPACED}]+")


def create(db: sqlite3.Connection) -> None:
    db.execute(
        f"CREATE TABLE IF NOT EXISTS {TEXT} ("
        " id INTEGER PRIMARY KEY,"
        " key TEXT NOT NULL UNIQUE,"  # the attachment's
        " stamp TEXT NOT NULL,"  # the version of the text the source named (FullText.stamp)
        " text BLOB,"  # zlib-compressed UTF-8; NULL: Zotero lists the attachment but holds no text for it
        " chars INTEGER NOT NULL DEFAULT 0,"
        " indexed_pages INTEGER, total_pages INTEGER, indexed_chars INTEGER, total_chars INTEGER)"
    )
    db.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {INDEX} USING fts5(body, content = '',"
        " tokenize = 'unicode61 remove_diacritics 2')"
    )


def _body(text: str) -> str:
    """What the index holds of a text: its words, each unspaced run as bigrams and its last character."""
    if text.isascii() or max(text) < _FIRST_UNSPACED:  # most text: both are fast, the class is not
        return text
    return _UNSPACED_RUN.sub(lambda run: " ".join(searchtext.bigrams(run.group())), text)


_FIRST_UNSPACED = "\u0e00"  # the lowest character of searchtext.UNSPACED


def _pack(text: str) -> bytes:
    # Level 1: a sixth of level 6's time for a text a fifth larger (0.34 of its size, not 0.29): a pull
    # of thousands of texts spends it once each, on the thread that writes the store.
    return zlib.compress(text.encode("utf-8", "replace"), 1)


def _unpack(blob: bytes) -> str:
    return zlib.decompress(blob).decode("utf-8", "replace")


def bounded(text: str) -> str:
    """A text as the store keeps it: NUL and other C0 controls but tab and newline as spaces (SQLite's
    FTS and every terminal take them badly), in NFC, at most MAX_CHARS characters."""
    text = _CONTROLS.sub(" ", text[:MAX_CHARS])
    # half of an emoji from JSON's \ud83d escapes: U+FFFD in its place
    if not text.isascii() and _SURROGATE.search(text):
        text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def stamps(db: sqlite3.Connection) -> dict[str, str]:
    """attachment key → the stamp of the text the store holds."""
    return dict(db.execute(f"SELECT key, stamp FROM {TEXT}"))


def save(db: sqlite3.Connection, texts: Iterable[FullText]) -> int:
    """The texts written (each replacing the one the store held for its attachment); how many."""
    written = 0
    for text in texts:
        _drop(db, text.key)
        content = None if text.content is None else bounded(text.content)
        cursor = db.execute(
            f"INSERT INTO {TEXT} (key, stamp, text, chars, indexed_pages, total_pages, indexed_chars,"
            " total_chars) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                text.key,
                text.stamp,
                None if content is None else _pack(content),
                len(content or ""),
                text.indexed_pages,
                text.total_pages,
                text.indexed_chars,
                text.total_chars,
            ),
        )
        if content:
            db.execute(f"INSERT INTO {INDEX} (rowid, body) VALUES (?, ?)", (cursor.lastrowid, _body(content)))
        written += 1
    return written


class Writer:
    """Texts written as they arrive, each at once, in transactions of about `batch` characters: the
    work of indexing is spread over the pull instead of stalling it at each batch's end. A text
    committed stays when a later one fails: its stamp says it need not be fetched again."""

    def __init__(self, db: sqlite3.Connection, batch: int = 8 * 2**20) -> None:
        self.db = db
        self.batch = batch
        self._pending = 0
        self.with_text = 0  # texts written that hold words (the rest: Zotero lists them, holds none)

    def add(self, text: FullText) -> None:
        if not self.db.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
        save(self.db, [text])
        self.with_text += bool(text.content)
        self._pending += len(text.content or "") + 1000
        if self._pending >= self.batch:
            self.db.execute("COMMIT")
            self._pending = 0

    def commit(self) -> None:
        if self.db.in_transaction:
            self.db.execute("COMMIT")
        self._pending = 0

    def rollback(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")
        self._pending = 0


def _drop(db: sqlite3.Connection, key: str) -> bool:
    row = db.execute(f"SELECT id, text FROM {TEXT} WHERE key = ?", (key,)).fetchone()
    if row is None:
        return False
    text_id, blob = row
    if blob is not None:
        content = _unpack(blob)
        if content:
            db.execute(
                f"INSERT INTO {INDEX} ({INDEX}, rowid, body) VALUES ('delete', ?, ?)",
                (text_id, _body(content)),
            )
    db.execute(f"DELETE FROM {TEXT} WHERE id = ?", (text_id,))
    return True


def remove(db: sqlite3.Connection, keys: Iterable[str]) -> int:
    """The texts of `keys` gone, words and all; how many there were."""
    return sum(_drop(db, key) for key in keys)


def prune(db: sqlite3.Connection) -> int:
    """The texts of attachments the store no longer holds, or holds in the trash (or below an item in
    the trash), removed; how many."""
    gone = [
        key
        for (key,) in db.execute(
            f"SELECT t.key FROM {TEXT} t LEFT JOIN items i ON i.key = t.key"
            " LEFT JOIN items p ON p.key = i.parent_key"
            " WHERE i.key IS NULL OR i.deleted != 0 OR coalesce(p.deleted, 0) != 0"
        ).fetchall()
    ]
    return remove(db, gone)


def text_of(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute(f"SELECT text FROM {TEXT} WHERE key = ?", (key,)).fetchone()
    return None if row is None or row[0] is None else _unpack(row[0])


def texts_of_paper(db: sqlite3.Connection, paper: str) -> list[tuple[str, str]]:
    """(attachment key, text) of the paper `paper` (its own text when it is an attachment itself), in
    key order."""
    rows = db.execute(
        f"SELECT t.key, t.text FROM {TEXT} t JOIN items i ON i.key = t.key"
        " WHERE (i.parent_key = ? OR i.key = ?) AND i.deleted = 0 AND t.text IS NOT NULL ORDER BY t.key",
        (paper, paper),
    )
    return [(key, _unpack(blob)) for key, blob in rows]


class Counts(NamedTuple):
    with_text: int
    without_text: int
    partial: int
    chars: int


def counts(db: sqlite3.Connection) -> Counts:
    row = db.execute(
        f"SELECT count(text), count(*) - count(text),"
        " count(CASE WHEN indexed_pages < total_pages OR indexed_chars < total_chars THEN 1 END),"
        f" coalesce(sum(chars), 0) FROM {TEXT}"
    ).fetchone()
    return Counts(*row)


# -- searching --------------------------------------------------------------------------------------------


def match_expression(words: Sequence[str]) -> str:
    """An FTS5 MATCH for the index: every word, each unspaced run as the phrase of its bigrams (a single
    character: the start of a token)."""
    parts = []
    for word in words:
        for piece in _pieces(word):
            if not _UNSPACED_RUN.fullmatch(piece):
                parts.append(f'"{piece}"')
            elif len(piece) == 1:
                parts.append(f'"{piece}" *')
            else:
                parts.append('"' + " ".join(piece[i : i + 2] for i in range(len(piece) - 1)) + '"')
    return " AND ".join(parts)


def _pieces(word: str) -> Iterator[str]:
    start = 0
    for run in _UNSPACED_RUN.finditer(word):
        if run.start() > start:
            yield word[start : run.start()]
        yield run.group()
        start = run.end()
    if start < len(word):
        yield word[start:]


class TextHit(NamedTuple):
    paper: str  # the attachment's parent (the attachment itself when it has none)
    attachment: str
    score: float


def search(
    db: sqlite3.Connection, words: Sequence[str], limit: int, skip: Iterable[str] = ()
) -> list[TextHit]:
    """The best `limit` papers whose attachments' text holds every word, best first (one hit a paper,
    from its best attachment), leaving out the papers in `skip`."""
    expression = match_expression(words)
    if not expression or not db.execute(f"SELECT 1 FROM {TEXT} LIMIT 1").fetchone():
        return []
    rows = db.execute(
        f"WITH found AS MATERIALIZED ("
        f" SELECT rowid, bm25({INDEX}) AS score FROM {INDEX} WHERE {INDEX} MATCH ?)"
        f" SELECT coalesce(i.parent_key, i.key), t.key, f.score FROM found f JOIN {TEXT} t ON t.id = f.rowid"
        " JOIN items i ON i.key = t.key WHERE i.deleted = 0"
        " AND coalesce(i.parent_key, i.key) NOT IN (SELECT value FROM json_each(?))"
        " ORDER BY f.score, t.key",
        (expression, json.dumps(sorted(set(skip)))),
    )
    hits: dict[str, TextHit] = {}
    for paper, key, score in rows:
        if paper not in hits:
            hits[paper] = TextHit(paper, key, score)
            if len(hits) == limit:
                break
    return list(hits.values())
