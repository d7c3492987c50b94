"""What a user whom permissions bind gets: a store they may read but not write, a catalogue they may
not write. CI runs as root, whom permissions do not bind, so the commands run as `nobody`
(tests/unprivileged.py)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import unprivileged
from conftest import ROOT, Run
from unprivileged import IS_ROOT, reachable_folder  # noqa: F401  (a fixture)

READ_ONLY_COMMANDS = (
    ("status", "--format", "json"),
    ("list", "--format", "json"),
    ("export", "--format", "md", "--output", "-"),
    ("export", "--format", "csv", "--output", "-"),
    ("snapshot", "--output", "-"),
)


def demo_project(folder: Path) -> Path:
    """The bundled demo in `folder`; its config file."""
    shutil.copytree(ROOT / "config", folder / "config")
    shutil.copytree(ROOT / "seeds", folder / "seeds")
    (folder / "exports").mkdir()
    return folder / "config" / "zotsync.yaml"


def beside(path: Path) -> list[Path]:
    """The store and the files SQLite keeps beside it."""
    return [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]


def deny_writes(store: Path) -> None:
    """Leave the store readable by everyone and writable by no one but root: its folder and files as a
    root-owned store (mode 644 in a folder of mode 755) is for everyone else. When the tests do not run
    as root, the current user loses write access instead."""
    mode = 0o644 if IS_ROOT else 0o444
    for path in beside(store):
        if path.exists():
            path.chmod(mode)
    store.parent.chmod(0o755 if IS_ROOT else 0o555)


def files_beside(store: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(store.parent.iterdir())}


@pytest.fixture
def shared_store(reachable_folder: Path, run: Callable[..., Run]) -> tuple[Path, Path]:  # noqa: F811
    """A demo project synced by the current user whose store others may read but not write: (config,
    store)."""
    config = demo_project(reachable_folder)
    assert run("--config", str(config), "-q", "sync").code == 0
    store = reachable_folder / ".zotsync" / "zotsync.sqlite"
    deny_writes(store)
    return config, store


def test_read_only_commands_read_a_store_the_user_may_not_write(shared_store: tuple[Path, Path], run) -> None:
    config, store = shared_store
    folder = config.parent.parent
    before = files_beside(store)
    seen = {}
    for command in READ_ONLY_COMMANDS:
        result = unprivileged.zotsync(folder, *command, "--config", str(config))
        assert (result.returncode, result.stderr) == (0, ""), command
        seen[command] = result.stdout
    assert files_beside(store) == before  # nothing written, made or changed beside the store
    for command, out in seen.items():
        assert out == run("--config", str(config), *command).out, command  # what the owner sees


@pytest.mark.slow
def test_a_reader_sees_what_a_killed_sync_committed_to_the_wal(shared_store: tuple[Path, Path]) -> None:
    # A sync killed after its commit leaves it in the -wal file only (and the -shm index); a reader that
    # may write neither must read it, not the older page in the main file.
    config, store = shared_store
    script = (
        "import os, sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('PRAGMA wal_autocheckpoint = 0')\n"
        "db.execute(\"UPDATE sync_state SET value = 'renamed' WHERE name = 'library_name'\")\n"
        "os._exit(0)\n"
    )
    for path in beside(store):
        if path.exists():
            path.chmod(0o644)
    store.parent.chmod(0o755)
    subprocess.run([sys.executable, "-c", script, str(store)], check=True, timeout=60)
    deny_writes(store)
    assert store.with_name(store.name + "-wal").stat().st_size > 0
    result = unprivileged.zotsync(config.parent.parent, "status", "--format", "json", "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["library"]["name"] == "renamed"


def test_a_store_without_its_wal_files_in_a_folder_the_user_may_not_write_is_one_line(
    shared_store: tuple[Path, Path],
) -> None:
    # As a zotsync before this one left it: in WAL mode, with its -wal and -shm files deleted on close.
    config, store = shared_store
    store.parent.chmod(0o755)
    for path in beside(store)[1:]:
        path.unlink(missing_ok=True)
    assert store.read_bytes()[18:20] == b"\x02\x02"  # the header's WAL mark
    deny_writes(store)
    result = unprivileged.zotsync(config.parent.parent, "status", "--config", str(config))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"zotsync: error: cannot open the store {store}: its -wal and -shm files are missing and its "
        "folder is not writable, so SQLite cannot make the ones a reader needs; run `zotsync pull` once "
        "as the store's owner, which leaves them there (SQLite: attempt to write a readonly database)"
    ]


def test_wal_files_the_user_may_not_read_are_one_line(shared_store: tuple[Path, Path]) -> None:
    # The owner made the store readable (chmod 644) but not the files SQLite keeps beside it.
    config, store = shared_store
    for path in beside(store)[1:3]:
        path.chmod(0o600 if IS_ROOT else 0o000)
    result = unprivileged.zotsync(config.parent.parent, "status", "--config", str(config))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"zotsync: error: cannot open the store {store}: this user may not read its -wal and -shm files, "
        "which SQLite needs to read it; give them the store's permissions, or run `zotsync pull` once as "
        "the store's owner, which makes them anew with those (SQLite: unable to open database file)"
    ]


# -- a catalogue pin and adopt may not replace --------------------------------------------------------

UNCURATED = "57V8YMZM"  # in the demo library, claimed by no catalogue entry
EDITS = (("adopt", UNCURATED, "--category", "Compiler"), ("pin", "The tensor algebra compiler", "ACQ3YSAF"))


def identity(path: Path) -> tuple[bytes, int, int, int, int]:
    info = path.stat()
    return path.read_bytes(), info.st_ino, info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)


@pytest.mark.parametrize("edit", EDITS, ids=["adopt", "pin"])
def test_a_catalogue_the_user_may_not_write_is_refused_not_replaced(
    reachable_folder: Path,  # noqa: F811
    run: Callable[..., Run],
    edit: tuple[str, ...],
) -> None:
    # Mode 444 and, under root, owned by root: the user may write the folder (so a rename would go
    # through), the store and the lock, but not the catalogue itself.
    config = demo_project(reachable_folder)
    assert run("--config", str(config), "-q", "pull").code == 0
    unprivileged.give_away(reachable_folder)
    catalog = reachable_folder / "seeds" / "catalog.yaml"
    if IS_ROOT:
        os.chown(catalog, 0, 0)
    catalog.chmod(0o444)
    before = identity(catalog)
    result = unprivileged.zotsync(reachable_folder, *edit, "--config", str(config))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"zotsync: error: cannot write {catalog}: this user may not write it (mode 444), and zotsync does "
        "not replace a file it may not write; nothing written"
    ]
    assert identity(catalog) == before  # same file, bytes, owner and mode
    assert [p.name for p in catalog.parent.iterdir() if p.name.endswith(".tmp")] == []  # none left


@pytest.fixture
def synced(project: Path, run: Callable[..., Run]) -> Path:
    assert run("-q", "--config", str(project / "config" / "zotsync.yaml"), "pull").code == 0
    return project


@pytest.mark.parametrize("edit", EDITS, ids=["adopt", "pin"])
def test_a_catalogue_with_a_second_hard_link_is_refused(synced: Path, run, edit: tuple[str, ...]) -> None:
    # A rename would give the catalogue's name a new file and leave the other name with the old text.
    catalog = synced / "seeds" / "catalog.yaml"
    other = synced / "reading-list.yaml"
    os.link(catalog, other)
    before = catalog.read_bytes()
    result = run("--config", str(synced / "config" / "zotsync.yaml"), *edit)
    assert result.code == 1
    assert result.err.splitlines() == [
        f"zotsync: error: cannot write {catalog}: it has 2 hard links, and replacing it would leave the "
        "other names with the old text; nothing written — edit it by hand, or remove the other links"
    ]
    assert catalog.read_bytes() == other.read_bytes() == before
    assert catalog.stat().st_ino == other.stat().st_ino


@pytest.mark.parametrize("edit", EDITS, ids=["adopt", "pin"])
def test_an_edit_keeps_the_catalogues_owner_group_and_mode(synced: Path, run, edit: tuple[str, ...]) -> None:
    # Run by root (as CI does), the catalogue stays its user's instead of becoming root's; run by its
    # owner, the owner's mode stays.
    catalog = synced / "seeds" / "catalog.yaml"
    if IS_ROOT:
        import pwd

        nobody = pwd.getpwnam("nobody")
        os.chown(catalog, nobody.pw_uid, nobody.pw_gid)
    catalog.chmod(0o640)
    _, inode, uid, gid, mode = identity(catalog)
    result = run("--config", str(synced / "config" / "zotsync.yaml"), *edit)
    assert result.code == 0, result.err
    text, new_inode, *kept = identity(catalog)
    key = edit[1] if edit[0] == "adopt" else edit[2]
    assert new_inode != inode and key.encode() in text  # replaced, with the edit
    assert kept == [uid, gid, mode]
