"""A store whose schema text SQLite reads without a complaint, but which is not UTF-8 (a flipped byte in a
keyword, a name, a comment), is the store's one line on every command: damaged, restore or re-pull."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest


def damage_schema(store: Path, table: str, word: bytes, flipped: bytes) -> None:
    """Rewrite `table`'s CREATE statement in sqlite_master with `word` replaced by `flipped`, as a bad
    sector or a careless tool would, leaving SQLite's own integrity check content."""
    db = sqlite3.connect(store, isolation_level=None)
    try:
        db.text_factory = bytes
        (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        assert word in sql
        db.execute("PRAGMA writable_schema = ON")
        damaged = sql.replace(word, flipped, 1)
        db.execute("UPDATE sqlite_master SET sql = CAST(? AS TEXT) WHERE name = ?", (damaged, table))
        db.execute("PRAGMA writable_schema = OFF")
        assert db.execute("PRAGMA integrity_check").fetchall() == [(b"ok",)]
    finally:
        db.close()


TABLES = ("items", "sync_state", "derived")
COMMANDS = [
    ["status"],
    ["sync"],
    ["pull"],
    ["list"],
    ["search", "tensor"],
    ["export", "--format", "csv", "--output", "-"],
    ["enrich", "--dry-run"],
    ["snapshot", "--output", "{project}/library.json"],
]


@pytest.mark.parametrize(
    ("table", "word", "flipped"),
    [
        # SQLite's own message about the schema quotes the byte, which Python cannot decode
        *[
            (table, b"CREATE TABLE " + table.encode(), b"CREATE \xffABLE " + table.encode())
            for table in TABLES
        ],
        ("schema_migrations", b"PRIMARY KEY", b"\xffRIMARY KEY"),  # the versions lose their key
    ],
)
def test_a_store_whose_schema_text_is_not_utf8_is_one_line_on_every_command(
    project: Path, run, table: str, word: bytes, flipped: bytes
) -> None:
    config = str(project / "config" / "zotsync.yaml")
    assert run("-q", "--config", config, "sync").code == 0
    store = project / ".zotsync" / "zotsync.sqlite"
    run("-q", "--config", config, "status")  # leaves the WAL checkpointed into the file
    damage_schema(store, table, word, flipped)
    exports = {path.name: path.read_bytes() for path in (project / "exports").iterdir() if path.is_file()}
    for command in COMMANDS:
        result = run("--config", config, *(part.format(project=project) for part in command))
        assert result.code == 1, (command, result.err)
        lines = result.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("zotsync: error:"), (command, lines)
        assert "unexpected" not in lines[0] and str(store) in lines[0], (command, lines)
        assert "the file is damaged" in lines[0] and "run `zotsync pull`" in lines[0], (command, lines)
    # Nothing zotsync wrote before is lost.
    for name, data in exports.items():
        assert (project / "exports" / name).read_bytes() == data
