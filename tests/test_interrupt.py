"""Ctrl-C (SIGINT), and SIGTERM: exit 130 (143) with the one line every failure gets — no blank line
before it in a cron mail or `cron.log` (only a terminal, which echoed `^C`, gets the line break) — and
the store and exports as they were."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from factories import config_of, small_library, write_web_config
from zotero_server import Fault

from zotsync.app import page as app


def sync_in_a_child(tmp_path: Path, server, requests: int) -> tuple[subprocess.Popen[str], Path]:
    """`zotsync sync` against `server` in a child process, with a log file, once the server has received
    `requests` requests; the child and its log."""
    config = write_web_config(tmp_path, server.url)
    log = tmp_path / "zotsync.log"
    child = subprocess.Popen(
        [sys.executable, "-m", "zotsync", "--config", str(config), "--log-file", str(log), "sync"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while len(server.requests) < requests and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)
    return child, log


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT cannot be sent to a child process on Windows")
def test_ctrl_c_during_a_first_pull_is_one_line_exit_130_and_leaves_no_store(
    tmp_path: Path, zotero_api
) -> None:
    server = zotero_api(small_library())
    server.inject(Fault.delay(1.5))  # the first request hangs: the user gives up and presses Ctrl-C
    child, log = sync_in_a_child(tmp_path, server, requests=1)
    assert server.requests, "the sync never reached the server"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 130
    assert (out, err) == ("", "zotsync: error: interrupted\n")
    assert not (tmp_path / "store.sqlite").exists()  # the first pull never finished: no empty store
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines[-2].endswith(" ERROR interrupted") and " INFO exit 130 after " in lines[-1]


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="signals cannot be sent to a child process on Windows")
@pytest.mark.parametrize(
    ("signum", "code", "line"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
)
def test_a_signal_while_a_request_hangs_ends_the_run_at_once_with_its_one_line(
    tmp_path: Path, zotero_api, signum: int, code: int, line: str
) -> None:
    """Ctrl-C, or SIGTERM from `timeout` or systemd, while the server holds a request: the run ends
    now, not when the request's 30 s read timeout runs out, and ends its log as any failure does."""
    server = zotero_api(small_library())
    server.inject(Fault.delay(20))  # the first request hangs; the other first one comes back
    child, log = sync_in_a_child(tmp_path, server, requests=2)
    assert len(server.requests) == 2, "the sync never had both first requests out"
    sent = time.monotonic()
    child.send_signal(signum)
    out, err = child.communicate(timeout=30)
    assert time.monotonic() - sent < 5
    assert (child.returncode, out, err) == (code, "", f"zotsync: error: {line}\n")
    assert not (tmp_path / "store.sqlite").exists()
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines[-2].endswith(f" ERROR {line}") and f" INFO exit {code} after " in lines[-1]


def test_ctrl_c_after_the_pull_keeps_the_last_exports_and_says_one_line(
    project: Path, run, monkeypatch
) -> None:
    assert run("-q", "--config", config_of(project), "sync").code == 0
    exports = {p.name: p.read_bytes() for p in (project / "exports").rglob("*") if p.is_file()}
    catalogue = project / "seeds" / "catalog.yaml"
    catalogue.write_text(catalogue.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")

    def pressed_ctrl_c(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(app, "merge", pressed_ctrl_c)
    result = run("--config", config_of(project), "sync")
    assert (result.code, result.out, result.err) == (130, "", "zotsync: error: interrupted\n")
    assert {p.name: p.read_bytes() for p in (project / "exports").rglob("*") if p.is_file()} == exports
