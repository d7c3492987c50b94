"""Each paper's vector of meaning (`search.semantic`): one row per paper in `paper_vectors`, with a digest
of what it was made from, so that only a paper whose text changed is embedded again.

After each change the vectors are packed into one row of `vector_matrix` (`pack`), with what a ranking
needs of them all (their mean, and each one's length once centred): a search or `related` reads that
row with one query and compares the query with every vector at once.
"""

from __future__ import annotations

import itertools
import operator
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from .searchindex import _ALL_MEMBERS, ZoteroText, _zotero_text

__all__ = ["Packed", "ZoteroText", "made", "made_from", "pack", "packed", "paper_texts", "rows", "save"]


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


def rows(db: sqlite3.Connection) -> tuple[list[str], bytes]:
    """Every paper's key and its vector's bytes, joined in the same order (one query)."""
    found = db.execute("SELECT paper, vector FROM paper_vectors ORDER BY paper").fetchall()
    keys: Sequence[str] = ()
    blobs: Sequence[bytes] = ()
    if found:
        keys, blobs = zip(*found, strict=True)
    return list(keys), b"".join(blobs)


class Packed(NamedTuple):
    """Every vector in one row: what a search reads, in one query."""

    made: str
    papers: list[str]
    matrix: bytes
    mean: bytes
    lengths: bytes


def pack(db: sqlite3.Connection, packed: Packed) -> None:
    db.execute(
        "INSERT OR REPLACE INTO vector_matrix VALUES (1, ?, ?, ?, ?, ?)",
        (packed.made, "\n".join(packed.papers), packed.matrix, packed.mean, packed.lengths),
    )


def packed(db: sqlite3.Connection) -> Packed | None:
    """The packed row. Its matrix (26 MB at 100,000 papers) is read as a blob, twice as fast as a
    query's value; the row's `made` read again after says it was not packed anew meanwhile."""
    row = db.execute("SELECT made, papers, mean, lengths FROM vector_matrix WHERE id = 1").fetchone()
    if row is None:
        return None
    made, papers, mean, lengths = row
    try:
        with db.blobopen("vector_matrix", "matrix", 1, readonly=True) as blob:
            matrix = blob.read()
        again = db.execute("SELECT made FROM vector_matrix WHERE id = 1").fetchone()
        if again is None or again[0] != made:
            raise sqlite3.OperationalError("packed anew while read")
    except sqlite3.OperationalError:  # packed anew meanwhile: read the whole row at once
        found = db.execute("SELECT made, papers, matrix, mean, lengths FROM vector_matrix").fetchone()
        if found is None:
            return None
        made, papers, matrix, mean, lengths = found
    return Packed(made, papers.split("\n") if papers else [], matrix, mean, lengths)


def made(db: sqlite3.Connection) -> str | None:
    """What the packed row was made as (its `made`), read without its blobs."""
    row = db.execute("SELECT made FROM vector_matrix").fetchone()
    return None if row is None else str(row[0])
