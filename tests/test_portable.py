"""Portability: no Unix-only module on a command's path, and the run lock from filelock on every OS."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ROOT

from zotsync.store import exclusive_lock

GOLDEN = ROOT / "tests" / "golden"


def run_zotsync(*args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """The real entry point in a fresh interpreter, after `prelude` (say, hiding a module)."""
    script = textwrap.dedent(f"""
        import sys
        {prelude}
        from zotsync.cli import main
        sys.exit(main({list(args)!r}))
    """)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_sync_runs_without_fcntl(project: Path) -> None:
    """What Windows lacks: `import fcntl` fails, as it does there; the whole sync still works."""
    config = str(project / "config" / "zotsync.yaml")
    done = run_zotsync("-q", "--config", config, "sync", prelude="sys.modules['fcntl'] = None")
    assert done.returncode == 0, done.stderr
    assert "zotsync: error" not in done.stderr
    for name in ("catalog.md", "catalog.csv"):
        assert (project / "exports" / name).read_bytes() == (GOLDEN / name).read_bytes()
    # The lock is released: the next run (fcntl hidden again) is not blocked by a leftover.
    again = run_zotsync("--config", config, "sync", prelude="sys.modules['fcntl'] = None")
    assert again.returncode == 0, again.stderr
    assert "up to date" in again.stderr


@pytest.mark.slow
def test_a_second_process_fails_at_once_while_the_lock_is_held(project: Path) -> None:
    config = str(project / "config" / "zotsync.yaml")
    with exclusive_lock(project / ".zotsync" / "zotsync.sqlite"):
        started = time.monotonic()
        done = run_zotsync("--config", config, "sync")
        elapsed = time.monotonic() - started
    lines = done.stderr.splitlines()
    assert done.returncode == 1
    assert lines == [
        f"zotsync: error: another zotsync run holds the lock {project / '.zotsync' / 'zotsync.sqlite.lock'}"
    ]
    assert elapsed < 30  # no waiting for the lock: the interpreter's start-up is all it costs
    assert not (project / "exports" / "catalog.md").exists()
    # Released with the context: the same command now succeeds.
    assert run_zotsync("-q", "--config", config, "sync").returncode == 0


@pytest.mark.slow
def test_a_reader_says_a_first_pull_is_under_way_while_one_holds_the_lock(project: Path) -> None:
    config = str(project / "config" / "zotsync.yaml")
    store = project / ".zotsync" / "zotsync.sqlite"
    with exclusive_lock(store):  # as a first sync does before its store holds anything
        for command in (["status"], ["export", "--format", "csv"], ["search", "fusion"]):
            done = run_zotsync("--config", config, *command)
            assert done.returncode == 1, done.stderr
            assert done.stderr.splitlines() == [
                f"zotsync: error: a zotsync run is filling the store at {store} (its first pull): try again "
                "when it ends"
            ]
    done = run_zotsync("--config", config, "status")  # no run: what to do
    assert done.returncode == 1 and "run `zotsync pull` first" in done.stderr


def test_atomic_writes_keep_the_mode_without_os_fchmod(tmp_path: Path, monkeypatch) -> None:
    """Windows has no os.fchmod: a write must neither need it nor lose the file's mode where modes exist."""
    from zotsync.outputs import write_atomically

    monkeypatch.delattr("os.fchmod", raising=False)
    path = tmp_path / "catalog.md"
    path.write_text("old\n", encoding="utf-8")
    path.chmod(0o640)
    assert write_atomically(path, "new\n")
    assert path.read_text(encoding="utf-8") == "new\n"
    assert path.stat().st_mode & 0o777 == 0o640
