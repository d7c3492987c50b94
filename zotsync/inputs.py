"""Reading the files zotsync is given — the config, the catalogue, a venue table, a snapshot, the files
beside a zotero.sqlite — in one way: regular files only, and each kind within a bound.

A named pipe, `/dev/zero`, `/dev/urandom` or a socket given as one of these would otherwise hang a run
(it waits for a writer, or reads forever) while it holds the store's lock; a file of gigabytes would be
read whole into memory. Both are refused with one line before anything is read.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .errors import ConfigError, ZotsyncError

# The bounds are far above any real input and far below what would exhaust a machine.
# YAML (the config, the catalogue, a venue table): a real catalogue is well under 1 MB (5,000 entries
# are ~1 MB); 16 MB is a catalogue of ~80,000 entries.
MAX_YAML = 16 * 2**20
# A snapshot (the Web API's JSON): ~150 MB for a library of 100,000 items, about the largest there are;
# 1 GB is ~650,000 items, and parsing it already takes several GB of memory.
MAX_SNAPSHOT = 2**30

# O_NONBLOCK: opening a named pipe must not wait for a writer before fstat can tell it apart (POSIX;
# Windows has no FIFOs to guard against).
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)


@dataclass(frozen=True, slots=True)
class FileVersion:
    """A file's bytes and which file held them, as read: what an edit of it was made from."""

    data: bytes
    device: int
    inode: int


def absolute(path: Path) -> Path:
    """`path` resolved (links followed); a loop of symbolic links, which `Path.resolve` reports as a
    RuntimeError (Python < 3.13), stays as written, made absolute: what reads it then says what it is."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))


@contextlib.contextmanager
def open_input(
    path: Path, what: str, error: type[ZotsyncError] = ConfigError, pipe_hint: str = ""
) -> Iterator[BinaryIO]:
    """`path` opened for reading, when it is a regular file (a symbolic link to one is fine). Anything
    else is refused with `error("cannot read {what} {path}: it is …")`. FileNotFoundError is left to the
    caller, which knows how to say that its file is missing. `pipe_hint` follows the refusal of a pipe."""
    try:
        handle = os.open(path, os.O_RDONLY | _NONBLOCK | _BINARY)
    except FileNotFoundError:
        raise
    except OSError as exc:  # a socket cannot be opened at all: say what it is
        raise error(f"cannot read {what} {path}: {_why_not_opened(path, exc)}") from None
    try:
        mode = os.fstat(handle).st_mode
        refusal = _not_regular(mode)
        if refusal is not None:
            hint = pipe_hint if stat.S_ISFIFO(mode) else ""
            raise error(f"cannot read {what} {path}: {refusal}{hint}")
        if _NONBLOCK:
            os.set_blocking(handle, True)
        stream = open(handle, "rb")  # noqa: SIM115 (closed below, and the handle with it)
    except BaseException:
        os.close(handle)
        raise
    with stream:
        yield stream


def read_input(
    path: Path, what: str, most: int, error: type[ZotsyncError] = ConfigError, pipe_hint: str = ""
) -> bytes:
    """The bytes of the regular file `path`, refused with one line when it holds more than `most`."""
    return read_input_version(path, what, most, error, pipe_hint).data


def read_input_version(
    path: Path, what: str, most: int, error: type[ZotsyncError] = ConfigError, pipe_hint: str = ""
) -> FileVersion:
    """`read_input`, with the identity of the file the bytes came from (read through the same open
    file): what an edit of it is made from (`outputs.write_atomically(edit_of=…)`)."""
    with open_input(path, what, error, pipe_hint) as stream:
        try:
            info = os.fstat(stream.fileno())
            # the size first: a file far too large is refused unread; then at most one byte more than
            # the bound, in case it grows meanwhile
            data = stream.read(most + 1) if info.st_size <= most else None
        except OSError as exc:
            raise error(f"cannot read {what} {path}: {why_unreadable(path, exc)}") from None
    if data is None or len(data) > most:
        raise error(
            f"cannot read {what} {path}: it is larger than {most // 2**20} MB, zotsync's bound for this kind "
            "of file (is it the right one?)"
        )
    return FileVersion(data, info.st_dev, info.st_ino)


def read_text_input(
    path: Path, what: str, most: int, error: type[ZotsyncError] = ConfigError, pipe_hint: str = ""
) -> str:
    """`read_input` as UTF-8 text with universal newlines, as `Path.read_text` gives it."""
    data = read_input(path, what, most, error, pipe_hint)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"cannot read {what} {path}: {why_unreadable(path, exc)}") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def file_digest(path: Path) -> str | None:
    """SHA-256 of a regular file's bytes, streamed; None when it cannot be read (missing, a folder, a
    pipe or a device, which would never end: what reads it next says why)."""
    try:
        with open_input(path, str(path)) as stream:
            return hashlib.file_digest(stream, "sha256").hexdigest()  # type: ignore[arg-type]
    except (OSError, ZotsyncError):
        return None


def why_unreadable(path: Path, exc: OSError | UnicodeDecodeError) -> str:
    """Why a file cannot be read, in a few plain words (not `[Errno 21] Is a directory: '…'`)."""
    if isinstance(exc, UnicodeDecodeError):
        return f"it is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    if isinstance(exc, IsADirectoryError) or path.is_dir():  # Windows says "Permission denied"
        return "it is a folder"
    if exc.errno == errno.ELOOP:
        return "it is a loop of symbolic links"
    return exc.strerror or str(exc)


def _why_not_opened(path: Path, exc: OSError) -> str:
    try:
        refusal = _not_regular(path.stat().st_mode)
    except OSError:
        refusal = None
    return refusal or why_unreadable(path, exc)


def _not_regular(mode: int) -> str | None:
    """Why a file that is not a regular one is refused, in plain words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "it is a folder"
    kinds = (
        (stat.S_ISFIFO, "a pipe"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    kind = next((name for test, name in kinds if test(mode)), "no ordinary file")
    return f"it is {kind}, not a regular file"
