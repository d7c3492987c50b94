"""`--log-file`: a rotating record of each run, for a job nobody watches (cron, a timer, CI).

One line per event with a timestamp: the run's command line, what it did (the lines a user would see,
even under `-q`), warnings, the one-line error of a failure, and how it ended. Everything passes the
same secret-masking filter as the terminal."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import stat
import sys
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
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX; on Windows the is_symlink check stands alone
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


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
        handler = _LogFile(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    except OSError as exc:
        remove_folders(made)
        raise FileError(f"cannot open the log file {path}: {cause(exc, path)}") from None
    except FileError:
        remove_folders(made)
        raise
    handler.setFormatter(_OneLine(FORMAT, DATE_FORMAT))
    handler.setLevel(level)
    handler.addFilter(secrets)
    logging.getLogger("zotsync").addHandler(handler)
    events.addHandler(handler)
    events.setLevel(level)
    _open.append((handler, time.monotonic()))


class _LogFile(RotatingFileHandler):
    """The log file: a regular file (or a character device such as /dev/null, written in place), never
    written through a symbolic link — a link planted where the log goes would make zotsync append to any
    file it may write. A log that can no longer be written (the disk is full) is said once on stderr,
    and the run goes on: the log is a record of the run, not part of it."""

    failed = False

    def _open(self) -> io.TextIOWrapper:  # called again when the file rotates
        path = Path(self.baseFilename)
        with contextlib.suppress(FileNotFoundError):
            _check_log_file(path, path.lstat().st_mode)
        # O_NOFOLLOW: a link swapped in since the check fails instead of being followed; O_NONBLOCK: a
        # named pipe swapped in fails at once or is refused below, never waited on.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _NONBLOCK
        handle = os.open(path, flags, 0o666)
        try:
            _check_log_file(path, os.fstat(handle).st_mode)
            if _NONBLOCK:
                os.set_blocking(handle, True)
            stream = open(handle, self.mode, encoding=self.encoding, errors=self.errors)  # noqa: SIM115
            assert isinstance(stream, io.TextIOWrapper)  # a text mode: the log is text
            return stream
        except BaseException:
            os.close(handle)
            raise

    def emit(self, record: logging.LogRecord) -> None:
        if not self.failed:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        """Instead of a traceback block for each line the run logs: one warning, and no more writes."""
        if self.failed:
            return
        self.failed = True
        exc = sys.exc_info()[1]
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        logging.getLogger("zotsync").warning(
            "cannot write the log file %s: %s; the run goes on without it", self.baseFilename, why
        )


def _check_log_file(path: Path, mode: int) -> None:
    if stat.S_ISLNK(mode):
        raise FileError(
            f"cannot open the log file {path}: it is a symbolic link; zotsync does not write its log "
            "through a link (give the file it points to)"
        )
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):
        raise FileError(
            f"cannot open the log file {path}: it is not a regular file (a pipe or a socket could stall a "
            "run that writes to it)"
        )


def close_log(exit_code: int) -> None:
    """Record how the run ended and close the file (a test or a long-lived caller may run again)."""
    while _open:
        handler, started = _open.pop()
        events.info("exit %d after %.2f s", exit_code, time.monotonic() - started)
        logging.getLogger("zotsync").removeHandler(handler)
        events.removeHandler(handler)
        with contextlib.suppress(OSError):  # the last lines could not be written either: said already
            handler.close()
