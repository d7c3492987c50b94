"""A run killed while it writes the exports leaves the temporary file `outputs.stage` was filling
(`.catalog.md.k3j9x_2a.tmp`): the next sync removes the stale ones of zotsync's own files, and nothing
else — not a user's file of a like name, not a temporary a writer may be using now."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from factories import realistic_library, write_realistic_project

TEMPORARY = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")
SETTINGS = "  formats: [md, csv, html, atom]\n  tags_page: true\n"


def temporaries(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*.tmp") if TEMPORARY.fullmatch(path.name))


def kill_while_writing(config: Path, exports: Path, deadline: float) -> None:
    """Start `zotsync sync` and SIGKILL it the moment a temporary of its appears in `exports`."""
    child = subprocess.Popen(
        [sys.executable, "-m", "zotsync", "--config", str(config), "-q", "sync"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while child.poll() is None and time.monotonic() < deadline:
            if any(True for _ in exports.rglob(".*.tmp")):
                break
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=60)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="SIGKILL is POSIX")
def test_a_sync_after_killed_runs_sweeps_their_stale_temporaries_and_nothing_else(run, tmp_path) -> None:
    config = write_realistic_project(tmp_path, realistic_library(papers=400), settings=SETTINGS)
    exports = tmp_path / "exports"
    deadline = time.monotonic() + 120
    kills = 0
    while not temporaries(exports) and time.monotonic() < deadline:
        kill_while_writing(config, exports, deadline)
        kills += 1
    left = temporaries(exports)
    assert left, f"no run was caught writing in {kills} kills"
    # A user's files, named like temporaries but not of a file zotsync writes, or not in its pattern.
    users = [exports / ".mine.abcdefgh.tmp", exports / ".catalog.md.tmp", exports / "notes" / "draft.tmp"]
    for path in users:
        path.parent.mkdir(exist_ok=True)
        path.write_text("mine\n", encoding="utf-8")
    long_ago = time.time() - 3600  # an hour: far longer than any write takes
    for path in [*left, *users]:
        os.utime(path, (long_ago, long_ago))
    # A temporary of zotsync's own pattern written just now: a writer may be using it.
    fresh = exports / ".catalog.md.fresh123.tmp"
    fresh.write_text("being written\n", encoding="utf-8")

    assert run("--config", str(config), "sync").code in (0, 3)
    assert not any(path.exists() for path in left)  # every stale one gone
    assert fresh.read_text(encoding="utf-8") == "being written\n"  # the fresh one kept
    for path in users:
        assert path.read_text(encoding="utf-8") == "mine\n"
    # and the exports are whole: what a sync into a clean folder writes
    clean = tmp_path / "clean"
    clean_config = write_realistic_project(clean, realistic_library(papers=400), settings=SETTINGS)
    assert run("--config", str(clean_config), "sync").code in (0, 3)
    for name in ("catalog.md", "catalog.csv", "catalog.html", "tags.md"):
        assert (exports / name).read_bytes() == (clean / "exports" / name).read_bytes()
