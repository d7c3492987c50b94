"""One tagged entry in the user's crontab, through the system `crontab` command.

python-crontab builds and parses the entry, but the table is edited line by line here: rendering a
whole table through python-crontab rewrites the user's lines (it unquotes `MAILTO="…"`, turns
`0 * * * *` into `@hourly`, moves variables), and a user's other lines must stay byte for byte. The table
is handled as bytes, never decoded as a whole: a CRLF line keeps its CR, a Latin-1 comment its bytes."""

from __future__ import annotations

import logging
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

# python-crontab logs each line it cannot parse (`@every 5m`, a typo) as an error on stderr; to zotsync
# such a line is simply not its entry, kept as it is.
logging.getLogger("crontab").addHandler(logging.NullHandler())
logging.getLogger("crontab").propagate = False


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


def read_table() -> bytes:
    """The user's crontab exactly as `crontab -l` prints it, as bytes (b'' when the user has none yet):
    not decoded, so a CRLF line or a Latin-1 byte in a comment comes back as it was."""
    done = _run([_crontab(), "-l"])
    if done.returncode != 0:
        if b"no crontab for" in done.stderr.lower():
            return b""
        raise CronError(f"`crontab -l` failed: {_first_line(done.stderr)}")
    if b"\0" in done.stdout:
        line = done.stdout.count(b"\n", 0, done.stdout.index(b"\0")) + 1
        raise CronError(
            f"the crontab holds a NUL byte (line {line}): it is not a text table zotsync can edit "
            "safely; fix it with `crontab -e`"
        )
    return done.stdout


def write_table(table: bytes) -> None:
    """Install `table` as the user's crontab (`crontab FILE`, which checks it before replacing)."""
    folder = tempfile.mkdtemp(prefix="zotsync-cron-")
    path = Path(folder) / "crontab"
    try:
        path.write_bytes(table)
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


def is_ours(line: bytes) -> bool:
    """An active entry carrying the tag (a line the user commented out is theirs now). A line's bytes
    need not be UTF-8: they are only looked at here, never rewritten."""
    from crontab import CronItem, CronTab

    text = line.decode("utf-8", "surrogateescape")
    if not text.strip() or text.lstrip().startswith("#"):
        return False
    job = CronItem.from_line(text, cron=CronTab(tab=""))
    return job.is_valid() and job.comment == TAG


def lines(table: bytes) -> list[bytes]:
    """The table's lines, each with its LF (the last may lack one). Split at LF alone, as cron reads it:
    a CR stays part of its line, so a CRLF line is written back as it was."""
    parts = table.split(b"\n")
    return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def find(table: bytes) -> list[str]:
    return [line.rstrip(b"\r\n").decode("utf-8", "replace") for line in lines(table) if is_ours(line)]


def without(table: bytes) -> bytes:
    """The table less our entry; every other line byte for byte."""
    return b"".join(line for line in lines(table) if not is_ours(line))


def with_entry(table: bytes, line: str) -> bytes:
    """The table with exactly one entry of ours, `line`: in the old entry's place, else at the end."""
    old_lines = lines(table)
    entry = line.encode("utf-8")
    at = next((i for i, old in enumerate(old_lines) if is_ours(old)), None)
    kept = [old for old in old_lines if not is_ours(old)]
    if at is None:
        if kept and not kept[-1].endswith(b"\n"):
            kept[-1] += b"\n"  # cron ignores a last line without its newline
        return b"".join(kept) + entry + b"\n"
    ending = b"\r\n" if old_lines[at].endswith(b"\r\n") else b"\n"
    kept.insert(at - sum(1 for old in old_lines[:at] if is_ours(old)), entry + ending)
    return b"".join(kept)


def _run(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(argv, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CronError(f"cannot run {argv[0]}: {exc}") from None


def _first_line(output: bytes) -> str:
    text = output.decode("utf-8", "replace")  # the message of a crontab in any locale: shown, not parsed
    return next((line.strip() for line in text.splitlines() if line.strip()), "no message")
