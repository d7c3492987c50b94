"""`--log-file`: what an unattended run leaves behind — timestamped, one line per event, rotating, and
never the API key."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ZOTERO_API_KEY
from factories import config_of, small_library, write_web_config

from zotsync import __version__, runlog

LINE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} (DEBUG|INFO|WARNING|ERROR) \S.*")


def lines_of(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines and all(LINE.fullmatch(line) for line in lines), lines
    return [line.split(" ", 1)[1] for line in lines]  # level and message


def test_a_quiet_sync_logs_what_it_did_and_how_it_ended(project: Path, run) -> None:
    log = project / "logs" / "zotsync.log"  # the folder is made on demand
    result = run("-q", "--log-file", str(log), "--config", config_of(project), "sync")
    assert (result.code, result.out, result.err) == (0, "", "")
    events = lines_of(log)
    assert events[0] == f"INFO zotsync {__version__} sync"
    assert f"INFO config {project / 'config' / 'zotsync.yaml'}" in events
    assert any(e.startswith("INFO first pull → 480: ") for e in events)
    assert f"INFO wrote {project / 'exports' / 'catalog.md'}" in events
    assert re.fullmatch(r"INFO exit 0 after \d+\.\d\d s", events[-1])

    run("--log-file", str(log), "--config", config_of(project), "sync", "--json", "--exit-code")
    second = lines_of(log)[len(events) :]  # appended, not replaced
    assert "INFO up to date at library version 480" in second  # logged even though --json kept it off
    assert f"INFO unchanged {project / 'exports' / 'catalog.md'}" in second
    assert re.fullmatch(r"INFO exit 0 after \d+\.\d\d s", second[-1])


def test_a_failed_pull_logs_its_one_line_and_exit_code(project: Path, run) -> None:
    log = project / "zotsync.log"
    (project / "seeds" / "zotero-library.json").write_text("[{", encoding="utf-8")
    result = run("-q", "--log-file", str(log), "--config", config_of(project), "pull")
    assert result.code == 1
    message = result.err.removeprefix("zotsync: error: ").rstrip("\n")
    assert "snapshot is not valid JSON" in message
    events = lines_of(log)
    assert events[-2:] == [f"ERROR {message}", events[-1]]
    assert re.fullmatch(r"INFO exit 1 after \d+\.\d\d s", events[-1])


def test_a_usage_error_is_logged_too(project: Path, run) -> None:
    log = project / "zotsync.log"
    result = run("--log-file", str(log), "--config", str(project / "missing.yaml"), "sync")
    assert result.code == 2
    events = lines_of(log)
    assert events[-2].startswith("ERROR config file not found") and events[-1].startswith("INFO exit 2 ")


def test_the_api_key_is_masked_in_the_log(tmp_path: Path, zotero_api, run, monkeypatch) -> None:
    server = zotero_api(small_library())
    config = write_web_config(tmp_path, server.url)
    log = tmp_path / "zotsync.log"
    assert run("-v", "--log-file", str(log), "--config", str(config), "sync").code == 0
    # A catalogue path that happens to hold the key: the error names the path, the log must not show it.
    text = config.read_text(encoding="utf-8")
    config.write_text(re.sub(r"catalog: .*", f"catalog: {ZOTERO_API_KEY}/catalog.yaml", text), "utf-8")
    monkeypatch.setenv("ZOTERO_API_KEY", ZOTERO_API_KEY)
    result = run("--log-file", str(log), "--config", str(config), "sync")
    assert result.code == 2 and "***/catalog.yaml" in result.err
    written = log.read_text(encoding="utf-8")
    assert "***/catalog.yaml" in written and ZOTERO_API_KEY not in written
    assert any(line.startswith("DEBUG ") for line in lines_of(log))  # -v logs each step to the file


def test_the_log_rotates(project: Path, run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runlog, "MAX_BYTES", 600)
    log = project / "zotsync.log"
    for _ in range(4):
        assert run("-q", "--log-file", str(log), "--config", config_of(project), "sync").code == 0
    rotated = sorted(p.name for p in project.glob("zotsync.log.*"))
    assert rotated and rotated[0] == "zotsync.log.1"
    for path in [log, *project.glob("zotsync.log.*")]:
        assert path.stat().st_size <= 600 + 300  # a file rotates before the line that would pass the limit
        lines_of(path)


def test_a_log_file_that_cannot_be_opened_is_a_runtime_failure(project: Path, run) -> None:
    blocker = project / "not-a-folder"  # more cases: tests/test_file_failures.py
    blocker.write_text("", encoding="utf-8")
    result = run("--log-file", str(blocker / "zotsync.log"), "--config", config_of(project), "sync")
    assert result.code == 1  # a file zotsync writes, like an export: not a usage error
    assert result.err.startswith("zotsync: error: cannot open the log file ") and result.err.count("\n") == 1
    assert not (project / "exports" / "catalog.md").exists()  # nothing ran


def test_without_a_log_file_nothing_is_logged_anywhere(project: Path, run) -> None:
    result = run("-q", "--config", config_of(project), "sync", "--json")
    assert result.err == "" and json.loads(result.out)["changed"] is True
    assert not list(project.rglob("*.log"))


def test_log_file_after_the_command_works_like_the_other_global_options(project: Path, run) -> None:
    log = project / "after.log"
    result = run("sync", "-q", "--log-file", str(log), "--config", config_of(project))
    assert (result.code, result.out, result.err) == (0, "", "")
    events = lines_of(log)
    assert events[0] == f"INFO zotsync {__version__} sync"
    assert any(e.startswith("INFO first pull → 480: ") for e in events)
    assert re.fullmatch(r"INFO exit 0 after \d+\.\d\d s", events[-1])


def test_a_tilde_in_the_log_file_is_the_home_folder(project: Path, run, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("USERPROFILE", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    result = run("-q", "--log-file", "~/logs/zotsync.log", "--config", config_of(project), "sync")
    assert (result.code, result.err) == (0, "")
    assert lines_of(tmp_path / "home" / "logs" / "zotsync.log")[0] == f"INFO zotsync {__version__} sync"
    assert not (tmp_path / "~").exists()  # not a folder named ~ in the working directory


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="a closed pipe is EINVAL, not EPIPE, on Windows")
def test_output_into_a_pipe_nobody_reads_exits_1_quietly_and_the_log_says_why(project: Path) -> None:
    """`zotsync list | head -1` on a big library: the reader goes away; no traceback on the terminal,
    exit 1 (the output was not all delivered), and the log file still ends with how the run ended."""
    assert run_cli(project, "-q", "sync").returncode == 0
    log = project / "pipe.log"
    child = subprocess.Popen(
        [sys.executable, "-m", "zotsync", "--config", config_of(project), "--log-file", str(log), "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the reader is gone before the first line
    err = child.stderr.read()
    assert child.wait(timeout=60) == 1 and err == ""
    events = lines_of(log)
    assert "WARNING the output was cut short: what read it (a pipe) stopped reading" in events
    assert re.fullmatch(r"INFO exit 1 after \d+\.\d\d s", events[-1])


def run_cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zotsync", "--config", config_of(project), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


# -- a log that cannot be written, and one that is not a plain file --------------------------------------


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full, a device every write to fails")
def test_a_log_file_that_cannot_be_written_warns_once_and_keeps_the_runs_outcome(project: Path, run) -> None:
    """A full disk under the log: a successful `-q sync` stays a success (before: six traceback blocks
    and exit 1), and a failed one keeps its own line and exit code."""
    warning = (
        "zotsync: cannot write the log file /dev/full: No space left on device; the run goes on without it"
    )
    result = run("-q", "--log-file", "/dev/full", "--config", config_of(project), "sync")
    assert (result.code, result.out, result.err.splitlines()) == (0, "", [warning])
    assert (project / "exports" / "catalog.md").is_file()

    (project / "seeds" / "zotero-library.json").write_text("[{", encoding="utf-8")
    result = run("-q", "--log-file", "/dev/full", "--config", config_of(project), "sync")
    assert result.code == 1
    assert result.err.splitlines()[0] == warning
    assert result.err.splitlines()[1].startswith("zotsync: error: ")
    assert len(result.err.splitlines()) == 2


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symbolic links")
def test_the_log_is_never_written_through_a_symbolic_link(project: Path, run) -> None:
    target = project / "elsewhere.txt"
    target.write_text("someone else's file\n", encoding="utf-8")
    link = project / "zotsync.log"
    link.symlink_to(target)
    result = run("-q", "--log-file", str(link), "--config", config_of(project), "sync")
    assert result.code == 1
    assert result.err == (
        f"zotsync: error: cannot open the log file {link}: it is a symbolic link; zotsync does not write its "
        "log through a link (give the file it points to)\n"
    )
    assert target.read_text(encoding="utf-8") == "someone else's file\n"
    assert not (project / "exports" / "catalog.md").exists()  # refused before the run
