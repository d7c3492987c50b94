"""The model's tokenizer for one short text (a search's query), without reading its 1.8 MB JSON file.

The model's tokenizer (LLaMA 2's: byte-pair merges over the whole text, spaces as `▁`, bytes for a
character it lacks) takes about 0.1 s to load with `tokenizers`, more than a query takes to answer. So
its single characters and merges are kept once in a small SQLite file in the user's cache folder, made
from the JSON file on first use, and a query looks up only the pairs it meets. `tokenize` gives exactly
the ids `tokenizers` gives (tests/test_meaning.py compares them); a text it cannot be sure of (one with
a special token's spelling in it), or a cache it cannot read or write, gets None: the caller then uses
`tokenizers`.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import os
import sqlite3
from pathlib import Path

SPACE = "▁"
SPECIAL = ("<unk>", "<s>", "</s>")
_FORMAT = "1"  # of the cache file: a change makes it anew


def cache_path(source: Path) -> Path:
    """Where the compact form of the tokenizer file `source` is kept: named by the file's size and
    time, so that an upgraded model package gets its own."""
    import platformdirs

    stat = source.stat()
    stamp = hashlib.sha256(f"{source}|{stat.st_size}|{stat.st_mtime_ns}|{_FORMAT}".encode()).hexdigest()
    return platformdirs.user_cache_path("zotsync") / f"tokenizer-{stamp[:16]}.sqlite"


def _build(source: Path, target: Path) -> None:
    """Write the characters and merges of the tokenizer file `source` into `target`, atomically."""
    model = json.loads(source.read_text(encoding="utf-8"))["model"]
    vocab: dict[str, int] = model["vocab"]
    if model.get("type") != "BPE" or not model.get("byte_fallback") or model.get("dropout"):
        raise ValueError("not a byte-fallback BPE tokenizer")
    size = len(vocab)
    merges = []
    for rank, merge in enumerate(model["merges"]):
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        merges.append((vocab[left] * size + vocab[right], rank, vocab[left + right]))
    chars = [(piece, id_) for piece, id_ in vocab.items() if len(piece) == 1 or piece.startswith("<0x")]
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        db = sqlite3.connect(temporary)
        with db:
            db.execute("CREATE TABLE chars (piece TEXT PRIMARY KEY, id INTEGER) WITHOUT ROWID")
            db.execute("CREATE TABLE merges (pair INTEGER PRIMARY KEY, rank INTEGER, id INTEGER)")
            db.execute("CREATE TABLE size (n INTEGER)")
            db.executemany("INSERT INTO chars VALUES (?, ?)", chars)
            db.executemany("INSERT INTO merges VALUES (?, ?, ?)", merges)
            db.execute("INSERT INTO size VALUES (?)", (size,))
        db.close()
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


class Tokens:
    """The compact tokenizer: each lookup one indexed read."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        (self.size,) = db.execute("SELECT n FROM size").fetchone()
        self._merges: dict[int, tuple[int, int] | None] = {}

    @classmethod
    def open(cls, source: Path) -> Tokens | None:
        """The compact form of `source`, made first if need be; None when it cannot be."""
        try:
            path = cache_path(source)
            for attempt in range(2):
                if not path.exists():
                    _build(source, path)
                try:
                    # read-only, so one connection serves every thread (`zotsync mcp` over HTTP)
                    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
                    return cls(db)
                except sqlite3.Error:  # damaged (a disk full while it was made): made again, once
                    if attempt:
                        raise
                    path.unlink()
        except (OSError, sqlite3.Error, ValueError, KeyError, TypeError):
            return None
        return None

    def _merge(self, left: int, right: int) -> tuple[int, int] | None:
        pair = left * self.size + right
        if pair not in self._merges:
            row = self.db.execute("SELECT rank, id FROM merges WHERE pair = ?", (pair,)).fetchone()
            self._merges[pair] = None if row is None else (row[0], row[1])
        return self._merges[pair]

    def _symbols(self, text: str) -> list[int]:
        """Each character's id; a character the vocabulary lacks as its UTF-8 bytes' ids."""
        wanted = set(text)
        found = dict(
            self.db.execute(
                f"SELECT piece, id FROM chars WHERE piece IN ({','.join('?' * len(wanted))})", list(wanted)
            )
        )
        ids: list[int] = []
        for char in text:
            if char in found:
                ids.append(found[char])
                continue
            for byte in char.encode("utf-8"):
                piece = f"<0x{byte:02X}>"
                if piece not in found:
                    row = self.db.execute("SELECT id FROM chars WHERE piece = ?", (piece,)).fetchone()
                    if row is None:
                        raise KeyError(piece)
                    found[piece] = row[0]
                ids.append(found[piece])
        return ids

    def tokenize(self, text: str) -> list[int] | None:
        """The ids `tokenizers` gives `text` (no special tokens added); None when not sure of them."""
        if any(special in text for special in SPECIAL):
            return None
        if not text:
            return []
        try:
            return self._merged(self._symbols(SPACE + text.replace(" ", SPACE)))
        except (sqlite3.Error, KeyError):
            return None

    def _merged(self, ids: list[int]) -> list[int]:
        """Byte-pair merging as `tokenizers` does it: the pair of the lowest rank first, the leftmost
        of equal ones, until no pair merges."""
        count = len(ids)
        after = list(range(1, count + 1))  # the next symbol's position (count: none)
        before = list(range(-1, count - 1))
        alive = [True] * count
        queue: list[tuple[int, int, int]] = []  # rank, position, merged id
        for i in range(count - 1):
            merge = self._merge(ids[i], ids[i + 1])
            if merge is not None:
                queue.append((merge[0], i, merge[1]))
        heapq.heapify(queue)
        while queue:
            _, i, merged = heapq.heappop(queue)
            j = after[i]
            if not alive[i] or j >= count:
                continue
            now = self._merge(ids[i], ids[j])
            if now is None or now[1] != merged:  # the pair changed since it was queued
                continue
            ids[i] = merged
            alive[j] = False
            after[i] = after[j]
            if after[j] < count:
                before[after[j]] = i
            if before[i] >= 0:
                left = self._merge(ids[before[i]], merged)
                if left is not None:
                    heapq.heappush(queue, (left[0], before[i], left[1]))
            if after[i] < count:
                right = self._merge(merged, ids[after[i]])
                if right is not None:
                    heapq.heappush(queue, (right[0], i, right[1]))
        return [id_ for id_, kept in zip(ids, alive, strict=True) if kept]
