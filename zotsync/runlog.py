"""`--log-file`: a rotating record of each run, for a job nobody watches (cron, a timer, CI).

One line per event with a timestamp: the run's command line, what it did (the lines a user would see,
even under `-q`), warnings, the one-line error of a failure, and how it ended. Everything passes the
same secret-masking filter as the terminal."""

from __future__ import annotations

import logging
import time
from logging.handlers import RotatingFileHandler
from pathlib import Path

from .errors import FileError
from .folders import cause, make_folders, remove_folders

MAX_BYTES = 1_000_000  # then the file rotates: zotsync.log.1 … .5 keep the older runs
BACKUPS = 5
FORMAT = "%(asctime)s %(levelname)s %(message)s"
DATE_FORMAT = "%Y-%m-%dT%H:%M:%S%z"

# What a run says to its user, copied into the log file; it never reaches the terminal twice.
events = logging.getLogger("zotsync.run")
events.propagate = False
events.addHandler(logging.NullHandler())  # no log file: nothing, not Python's last-resort stderr

_open: list[tuple[RotatingFileHandler, float]] = []


class _OneLine(logging.Formatter):
    """A message with line breaks (a quoted file, an odd error) still takes one line."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).replace("\r\n", "\n").replace("\n", "\\n")


def open_log(path: Path, level: int, secrets: logging.Filter) -> None:
    """Send zotsync's log and the run's events to `path` as well, until `close_log`."""
    # A log that cannot be opened is a failure of a file zotsync writes (exit 1), found before the run
    # starts; the folders made for it are removed again, so the failed run leaves nothing behind.
    if path.is_dir():
        raise FileError(f"cannot open the log file {path}: it is a folder")
    made: list[Path] = []
    try:
        made = make_folders(path.parent)
        handler = RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    except OSError as exc:
        remove_folders(made)
        raise FileError(f"cannot open the log file {path}: {cause(exc, path)}") from None
    handler.setFormatter(_OneLine(FORMAT, DATE_FORMAT))
    handler.setLevel(level)
    handler.addFilter(secrets)
    logging.getLogger("zotsync").addHandler(handler)
    events.addHandler(handler)
    events.setLevel(level)
    _open.append((handler, time.monotonic()))


def close_log(exit_code: int) -> None:
    """Record how the run ended and close the file (a test or a long-lived caller may run again)."""
    while _open:
        handler, started = _open.pop()
        events.info("exit %d after %.2f s", exit_code, time.monotonic() - started)
        logging.getLogger("zotsync").removeHandler(handler)
        events.removeHandler(handler)
        handler.close()
