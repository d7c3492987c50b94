"""Each paper's vector of meaning (`search.semantic`): one row per paper in `paper_vectors`, with a digest
of what it was made from, so that only a paper whose text changed is embedded again.

The vectors are read back with one query into one contiguous float16 matrix (`matrix`): a search or
`related` compares the query with every row at once.
"""

from __future__ import annotations

import itertools
import operator
import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from .searchindex import _ALL_MEMBERS, ZoteroText, _zotero_text

__all__ = ["ZoteroText", "made_from", "matrix", "paper_texts", "save"]


def paper_texts(db: sqlite3.Connection) -> Iterator[tuple[str, ZoteroText]]:
    """Every paper (a regular item not in the trash) with its text, by key, in one ordered scan."""
    for paper, group in itertools.groupby(db.execute(_ALL_MEMBERS), operator.itemgetter(0)):
        text = _zotero_text(group)
        if text is not None:
            yield paper, text


def made_from(db: sqlite3.Connection) -> dict[str, str]:
    """paper → the digest its stored vector was made from."""
    return dict(db.execute("SELECT paper, made_from FROM paper_vectors"))


def save(db: sqlite3.Connection, rows: Iterable[tuple[str, str, bytes]], gone: Iterable[str] = ()) -> None:
    """Keep `rows` (paper, digest, vector bytes) and drop the vectors of the papers `gone`."""
    db.executemany("INSERT OR REPLACE INTO paper_vectors VALUES (?, ?, ?)", rows)
    db.executemany("DELETE FROM paper_vectors WHERE paper = ?", ((paper,) for paper in sorted(gone)))


def matrix(db: sqlite3.Connection) -> tuple[list[str], bytes]:
    """Every paper's key and its vector's bytes, joined in the same order (one query)."""
    rows = db.execute("SELECT paper, vector FROM paper_vectors ORDER BY paper").fetchall()
    keys: Sequence[str] = ()
    blobs: Sequence[bytes] = ()
    if rows:
        keys, blobs = zip(*rows, strict=True)
    return list(keys), b"".join(blobs)
