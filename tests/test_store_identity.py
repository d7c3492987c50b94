"""Files that are not ours are never modified: the store is identified before any write, a file zotsync
did not write is refused with one line and left byte-identical, and read-only commands never create,
upgrade or convert a store."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import zotero_sqlite
from conftest import ROOT, SEEDS
from factories import back_to_schema_8

from zotsync.app.pull import pull
from zotsync.errors import StoreError
from zotsync.sources import SnapshotSource
from zotsync.store import APPLICATION_ID, Store

REAL_ZOTERO = ROOT.parent / "shared" / "fixtures" / "zotero-sqlite" / "tasmimmedha-hidms-9.0.6.sqlite"
COMMANDS = (("status",), ("export", "--format", "md"), ("pull",), ("sync",))


def point_store_at(project: Path, store: Path) -> str:
    config = project / "config" / "zotsync.yaml"
    text = config.read_text(encoding="utf-8").replace("store: ../.zotsync/zotsync.sqlite", f"store: {store}")
    config.write_text(text, encoding="utf-8")
    return str(config)


def fingerprint(path: Path) -> dict[str, str]:
    """sha256 of the file and of every file beside it that shares its name (-wal, -shm, -journal, .lock)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.parent.iterdir())
        if p.name.startswith(path.name)
    }


def zotero_database(folder: Path) -> Path:
    path = folder / "zotero.sqlite"
    if REAL_ZOTERO.exists():
        shutil.copyfile(REAL_ZOTERO, path)
    else:  # a clone without ../shared: the suite's own builder writes Zotero's schema
        zotero_sqlite.build(path, json.loads((SEEDS / "zotero-library.json").read_text(encoding="utf-8")))
    return path


def another_programs_database(folder: Path) -> Path:
    """No table clashes with zotsync's: today's code would silently add its seven tables to it."""
    path = folder / "notes.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        db.execute("INSERT INTO notes (body) VALUES ('keep me')")
    return path


def assert_refused(run, config: str, store: Path, what: str) -> None:
    before = fingerprint(store)
    for command in COMMANDS:
        result = run("--config", config, *command)
        assert result.code == 1, (command, result.err)
        assert result.err.splitlines() == [
            f"zotsync: error: {store} is not a zotsync store ({what}); zotsync leaves it untouched: "
            "set `store:` in the config to a file of zotsync's own"
        ], command
        assert fingerprint(store) == before, command  # byte-identical, no -wal/-shm/-journal created


def test_zoteros_own_database_as_the_store_is_refused_and_left_byte_identical(project: Path, run) -> None:
    store = zotero_database(project)
    config = point_store_at(project, store)
    assert_refused(run, config, store, "it looks like Zotero's own database")
    assert not (project / "exports" / "catalog.md").exists()


def test_a_running_zotero_10_database_in_wal_mode_is_left_alone_too(project: Path, run) -> None:
    store = project / "zotero.sqlite"
    zotero_sqlite.build(store, [])
    zotero_sqlite.leave_wal(store, lambda db: db.execute("UPDATE settings SET value = value"))
    assert store.with_name("zotero.sqlite-wal").exists()
    config = point_store_at(project, store)
    with zotero_sqlite.held(store, wal=True):  # Zotero holds it with locking_mode=EXCLUSIVE
        assert_refused(run, config, store, "it looks like Zotero's own database")


def test_another_programs_database_is_not_taken_over(project: Path, run) -> None:
    store = another_programs_database(project)
    config = point_store_at(project, store)
    assert_refused(run, config, store, "it looks like an SQLite database of another program")
    with sqlite3.connect(store) as db:
        assert [name for (name,) in db.execute("SELECT name FROM sqlite_master")] == ["notes"]


def test_a_database_marked_by_another_program_is_refused(project: Path, run) -> None:
    store = project / "map.gpkg"
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA application_id = 1196444487")  # GeoPackage's "GPKG"
        # Even tables named like ours: the mark says whose file it is.
        db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    assert_refused(
        run, point_store_at(project, store), store, "it looks like an SQLite database of another program"
    )


def test_a_file_that_is_not_sqlite_is_refused(project: Path, run) -> None:
    store = project / "notes.txt"
    store.write_text("my notes\n", encoding="utf-8")
    assert_refused(run, point_store_at(project, store), store, "it is not an SQLite database")


def test_an_empty_file_is_not_taken_for_a_store(project: Path, run) -> None:
    """zotsync never leaves an empty file at the store path (see the next test), so one is not its own."""
    store = project / "empty.sqlite"
    store.touch()
    assert_refused(run, point_store_at(project, store), store, "it is not an SQLite database")


def test_a_new_store_is_marked_and_a_failed_creation_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path):
        pass
    assert application_id(path) == APPLICATION_ID
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]

    import zotsync.store.db as store_module

    def fail(db: sqlite3.Connection) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store_module, "upgrade", fail)
    with pytest.raises(StoreError, match="cannot open the store"):
        Store(tmp_path / "other.sqlite")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]


def legacy_store(project: Path) -> Path:
    """A store as zotsync wrote it before the mark: migrations table, our tables, application_id 0."""
    path = project / ".zotsync" / "zotsync.sqlite"
    with Store(path) as store:
        pull(SnapshotSource(project / "seeds" / "zotero-library.json"), store)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("PRAGMA application_id = 0")
    return path


def application_id(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("PRAGMA application_id").fetchone()[0]


def test_a_store_written_before_the_mark_opens_and_is_upgraded_by_a_write_command(project: Path, run) -> None:
    store = legacy_store(project)
    config = str(project / "config" / "zotsync.yaml")
    before = fingerprint(store)[store.name]
    read_only = (
        ("status",),
        ("export", "--format", "csv", "--output", "-"),
        ("list", "--format", "json"),
        ("snapshot", "--output", str(project / "frozen.json")),
    )
    for command in read_only:
        result = run("--config", config, *command)
        assert result.code == 0, (command, result.err)
    assert application_id(store) == 0  # read-only commands do not convert it
    assert fingerprint(store)[store.name] == before
    result = run("--config", config, "sync")
    assert result.code == 0, result.err
    assert "up to date at library version 480" in result.err  # its content was kept
    assert application_id(store) == APPLICATION_ID


def test_read_only_commands_neither_create_nor_upgrade_a_store(project: Path, run) -> None:
    config = str(project / "config" / "zotsync.yaml")
    for command in (("status",), ("export", "--format", "md")):
        result = run("--config", config, *command)
        assert result.code == 1 and "run `zotsync pull` first" in result.err
    assert not (project / ".zotsync").exists()
    # A store from an older zotsync (one migration behind) is read, not upgraded, by `status`.
    store = legacy_store(project)
    back_to_schema_8(store)  # an older zotsync's store
    with contextlib.closing(sqlite3.connect(store, isolation_level=None)) as db:
        db.execute("DROP TABLE catalogue_rows")
    # The store itself (a WAL reader may add an empty -wal and update the -shm index beside its own store).
    before = fingerprint(store)[store.name]
    result = run("--config", config, "status")
    assert result.code == 1
    assert result.err.splitlines() == [
        f"zotsync: error: the store {store} was written by an older zotsync (schema 8): "
        "run `zotsync pull` once to upgrade it"
    ]
    assert fingerprint(store)[store.name] == before
    assert run("-q", "--config", config, "pull").code == 0
    assert run("-q", "--config", config, "status").code == 0


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="file-size limits (RLIMIT_FSIZE) are POSIX")
def test_a_full_disk_is_one_line_naming_it_and_the_store_keeps_its_state(project: Path) -> None:
    config = str(project / "config" / "zotsync.yaml")
    store = project / ".zotsync" / "zotsync.sqlite"
    with Store(store) as opened:
        pull(SnapshotSource(project / "seeds" / "zotero-library.json"), opened)
        before = (opened.library_version, len(opened.load().items))
    snapshot = project / "seeds" / "zotero-library.json"
    objects = json.loads(snapshot.read_text(encoding="utf-8"))
    for obj in objects:  # every item grows: far more than the disk (the file-size limit) still holds
        obj["data"]["abstractNote"] = "x" * 20_000
        obj["version"] = obj["data"]["version"] = obj["version"] + 1000
    snapshot.write_text(json.dumps(objects), encoding="utf-8")
    script = textwrap.dedent(f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
        from zotsync.cli import main
        sys.exit(main(["--config", {config!r}, "pull"]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"zotsync: error: the store {store} failed: ")
    assert "unexpected" not in line
    assert (
        "the disk is full (SQLite: database or disk is full)" in line or "reading or writing the disk" in line
    )
    with Store(store) as opened:
        assert (opened.library_version, len(opened.load().items)) == before


def test_database_or_disk_is_full_names_the_full_disk(tmp_path: Path) -> None:
    """SQLite's own SQLITE_FULL, from a page limit on the connection (a full disk without filling one)."""
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages + 2}")
        with pytest.raises(StoreError) as refused:
            pull(SnapshotSource(SEEDS / "zotero-library.json"), store)
        assert str(refused.value) == (
            f"the store {path} failed: the disk is full (SQLite: database or disk is full)"
        )
        assert store.library_version is None and store.load().items == ()
