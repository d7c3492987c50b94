"""One tagged entry in the user's crontab, through the system `crontab` command.

python-crontab builds and parses the entry, but the table is edited line by line here: rendering a
whole table through python-crontab rewrites the user's lines (it unquotes `MAILTO="…"`, turns
`0 * * * *` into `@hourly`, moves variables), and a user's other lines must stay byte for byte."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import ZotsyncError
from . import fit_for_a_job

TAG = "zotsync-schedule"  # the entry's trailing comment: how install, show and remove find it again


class CronError(ZotsyncError):
    """No crontab here, or the crontab command failed."""


def _crontab() -> str:
    found = shutil.which("crontab")  # looked up now, so the PATH of this run counts
    if found:
        return found
    if sys.platform == "win32":
        raise CronError(
            "Windows has no crontab: use Task Scheduler (docs/scheduling.md shows the schtasks line), "
            "or `zotsync schedule github`"
        )
    raise CronError("no `crontab` command on this machine: install cron, or use --systemd")


def read_table() -> str:
    """The user's crontab exactly as `crontab -l` prints it ('' when the user has none yet)."""
    done = _run([_crontab(), "-l"])
    if done.returncode != 0:
        if "no crontab for" in done.stderr.lower():
            return ""
        raise CronError(f"`crontab -l` failed: {_first_line(done.stderr)}")
    return done.stdout


def write_table(text: str) -> None:
    """Install `text` as the user's crontab (`crontab FILE`, which checks it before replacing)."""
    folder = tempfile.mkdtemp(prefix="zotsync-cron-")
    path = Path(folder) / "crontab"
    try:
        path.write_bytes(text.encode("utf-8"))
        done = _run([_crontab(), str(path)])
    finally:
        path.unlink(missing_ok=True)
        os.rmdir(folder)
    if done.returncode != 0:
        raise CronError(f"`crontab` refused the new table: {_first_line(done.stderr)}")


def entry(schedule: str, argv: list[str], output: Path) -> str:
    """The crontab line: when, the command with absolute paths, its output appended to `output`."""
    from crontab import CronTab

    command = f"{shlex.join(argv)} >> {shlex.quote(fit_for_a_job('cron log', output))} 2>&1"
    job = CronTab(tab="").new(command=command, comment=TAG)
    job.setall(schedule)
    return job.render()  # python-crontab escapes the `%` that cron would read as a newline


def is_ours(line: str) -> bool:
    """An active entry carrying the tag (a line the user commented out is theirs now)."""
    from crontab import CronItem, CronTab

    if not line.strip() or line.lstrip().startswith("#"):
        return False
    job = CronItem.from_line(line, cron=CronTab(tab=""))
    return job.is_valid() and job.comment == TAG


def find(table: str) -> list[str]:
    return [line.rstrip("\r\n") for line in table.splitlines(keepends=True) if is_ours(line)]


def without(table: str) -> str:
    """The table less our entry; every other line as it was."""
    return "".join(line for line in table.splitlines(keepends=True) if not is_ours(line))


def with_entry(table: str, line: str) -> str:
    """The table with exactly one entry of ours, `line`: in the old entry's place, else at the end."""
    lines = table.splitlines(keepends=True)
    at = next((i for i, old in enumerate(lines) if is_ours(old)), None)
    kept = [old for old in lines if not is_ours(old)]
    if at is None:
        if kept and not kept[-1].endswith("\n"):
            kept[-1] += "\n"  # cron ignores a last line without its newline
        return "".join(kept) + line + "\n"
    ending = "\r\n" if lines[at].endswith("\r\n") else "\n"
    kept.insert(at - sum(1 for old in lines[:at] if is_ours(old)), line + ending)
    return "".join(kept)


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CronError(f"cannot run {argv[0]}: {exc}") from None


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "no message")
