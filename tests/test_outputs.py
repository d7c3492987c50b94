"""What zotsync writes and reads among its outputs: atomic replacement only of regular files, devices and
FIFOs written in place, and no symbolic link followed or replaced (a link planted in the exports folder
must not publish the file it points to)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from factories import config_of

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, sockets and /dev are POSIX")


def zotsync(*args: str) -> subprocess.CompletedProcess[str]:
    """The real entry point in another process, bounded: a write that blocks fails the test, not CI."""
    return subprocess.run(
        [sys.executable, "-m", "zotsync", *args], capture_output=True, text=True, timeout=60
    )


@posix_only
def test_export_to_dev_null_leaves_the_device_a_device(project: Path, run) -> None:
    before = os.stat("/dev/null")
    assert stat.S_ISCHR(before.st_mode)
    assert run("-q", "--config", config_of(project), "pull").code == 0
    result = run("--config", config_of(project), "export", "--format", "md", "--output", "/dev/null")
    assert result.code == 0, result.err
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert stat.S_IMODE(after.st_mode) == stat.S_IMODE(before.st_mode)
    assert not list(Path("/dev").glob(".null.*.tmp"))


@pytest.mark.slow
@posix_only
def test_export_to_a_fifo_writes_into_it_and_keeps_it_a_fifo(project: Path, run) -> None:
    assert run("-q", "--config", config_of(project), "pull").code == 0
    expected = run("--config", config_of(project), "export", "--format", "csv", "--output", "-").out
    fifo = project / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    done = zotsync("--config", config_of(project), "export", "--format", "csv", "--output", str(fifo))
    reader.join(10)
    assert done.returncode == 0, done.stderr
    assert received == [expected.encode("utf-8")]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.slow
@posix_only
def test_sync_into_a_fifo_export_ends_and_renders_again_next_time(project: Path) -> None:
    fifo = project / "exports" / "catalog.csv"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read_twice() -> None:
        for _ in range(2):
            received.append(fifo.read_bytes())

    reader = threading.Thread(target=read_twice, daemon=True)
    reader.start()
    for _ in range(2):  # the second sync has nothing new, yet a pipe keeps none of what it was given
        done = zotsync("-q", "--config", config_of(project), "sync")
        assert done.returncode == 0, done.stderr
    reader.join(10)
    expected = zotsync("--config", config_of(project), "export", "--format", "csv", "--output", "-").stdout
    assert received == [expected.encode("utf-8")] * 2
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.slow
@posix_only
def test_a_fifo_nobody_reads_fails_at_once_instead_of_hanging(project: Path) -> None:
    assert zotsync("-q", "--config", config_of(project), "pull").returncode == 0
    fifo = project / "pipe"
    os.mkfifo(fifo)
    done = zotsync("--config", config_of(project), "export", "--format", "md", "--output", str(fifo))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"zotsync: error: cannot write {fifo}: nothing is reading from it"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@posix_only
def test_a_socket_or_a_folder_is_refused_not_replaced(project: Path, run, tmp_path_factory) -> None:
    assert run("-q", "--config", config_of(project), "pull").code == 0
    # AF_UNIX paths are short: bind in a short temporary folder.
    sock_path = Path(tmp_path_factory.mktemp("s")) / "sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(sock_path))
        for target, kind in ((sock_path, "a socket"), (project / "exports", "a folder")):
            result = run("--config", config_of(project), "export", "--format", "md", "--output", str(target))
            assert result.code == 1
            assert result.err.splitlines() == [
                f"zotsync: error: cannot write {target}: it is {kind}; zotsync replaces only regular files"
            ]
        assert stat.S_ISSOCK(sock_path.lstat().st_mode)
    finally:
        server.close()


def baseline_then_a_change(project: Path, run) -> None:
    """One sync (the digest's baseline), then a Zotero edit the next sync's CHANGES.md reports."""
    assert run("-q", "--config", config_of(project), "sync").code == 0
    snapshot = project / "seeds" / "zotero-library.json"
    objects = json.loads(snapshot.read_text(encoding="utf-8"))
    item = next(o for o in objects if o["key"] == "57V8YMZM")
    item["data"]["deleted"] = 1
    item["version"] = item["data"]["version"] = 9999
    snapshot.write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links need privileges on Windows")
def test_a_symlinked_changes_md_is_neither_read_nor_published(project: Path, run) -> None:
    baseline_then_a_change(project, run)
    secret = project / "private.txt"
    secret.write_text("TOP SECRET: not for the published page\n", encoding="utf-8")
    changes = project / "exports" / "CHANGES.md"
    changes.unlink()  # the baseline's file, replaced by a link
    changes.symlink_to(secret)
    result = run("--config", config_of(project), "sync")
    assert result.code == 1
    assert result.err.splitlines()[-1] == (
        f"zotsync: error: {changes} is a symbolic link: zotsync neither follows nor replaces links among "
        "the files it writes (in the exports folder, delete the link; for --output, give the file it "
        "points to, or - for stdout)"
    )
    for path in (project / "exports").rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert "TOP SECRET" not in path.read_text(encoding="utf-8"), path
    assert changes.is_symlink() and changes.readlink() == secret
    assert secret.read_text(encoding="utf-8") == "TOP SECRET: not for the published page\n"
    # Once the link is gone, the next sync writes the digest it owes.
    changes.unlink()
    assert run("-q", "--config", config_of(project), "sync").code == 0
    assert "Automatic Horizontal Fusion for GPU Kernels" in changes.read_text(encoding="utf-8")


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links need privileges on Windows")
def test_a_symlinked_export_is_neither_replaced_nor_written_through(project: Path, run) -> None:
    elsewhere = project / "somebody-elses.md"
    elsewhere.write_text("not zotsync's\n", encoding="utf-8")
    page = project / "exports" / "catalog.md"
    page.symlink_to(elsewhere)
    result = run("--config", config_of(project), "sync")
    assert result.code == 1
    assert f"zotsync: error: {page} is a symbolic link" in result.err
    assert page.is_symlink() and page.readlink() == elsewhere
    assert elsewhere.read_text(encoding="utf-8") == "not zotsync's\n"
