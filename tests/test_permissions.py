"""What a user whom permissions bind gets: a store they may read but not write, a catalogue they may
not write. CI runs as root, whom permissions do not bind, so the commands run as `nobody`
(tests/unprivileged.py)."""

from __future__ import annotations

import json
import shutil
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
