"""The files zotsync writes: replaced atomically, only when their bytes change, never through a link,
keeping their mode and owner; several of them together; and a curator's file only if nobody saved it
meanwhile."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import ExportError
from .inputs import FileVersion, file_digest

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX; Windows has no FIFOs to guard against


def read_version(path: Path, follow_links: bool = True) -> FileVersion:
    """The bytes of `path` and the identity of the file they came from, read through one open file, so
    that the two belong together. Raises OSError (IsADirectoryError for a folder) as reading does."""
    flags = os.O_RDONLY | _NONBLOCK | getattr(os, "O_BINARY", 0)  # a FIFO cannot hang the open
    flags |= 0 if follow_links else getattr(os, "O_NOFOLLOW", 0)
    with open(os.open(path, flags), "rb") as stream:
        info = os.fstat(stream.fileno())
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "it is not a regular file", str(path))
        return FileVersion(stream.read(), info.st_dev, info.st_ino)


def write_atomically(path: Path, text: str | bytes, *, edit_of: FileVersion | None = None) -> bool:
    """Replace `path` in one rename so a killed run never leaves half a file; skip identical content
    so an unchanged catalogue keeps its file (and its mtime) untouched. Returns whether it wrote. The
    new file keeps the old one's mode, and its owner and group where the OS lets this user give them.

    Only a regular file (or nothing) is replaced. A character device or FIFO (`/dev/null`, `/dev/stdout`,
    a named pipe), even behind a link, is written to directly; anything else is refused, a symbolic link
    to a file included: zotsync neither replaces a link nor writes through one to a file it may not own.

    `edit_of`: the text is an edit of the file as it was read (`read_version`), a file the user keeps
    (the catalogue). It replaces the file only if, just before the rename, that is still the same file
    holding the same bytes: anything saved meanwhile is kept and the write refused (compare and swap).
    It refuses, too, a file this user may not write (a rename would replace it anyway, given a writable
    folder) and a file with several hard links (a rename would leave the other names with the old
    text)."""
    staged = stage(path, text, edit_of=edit_of)
    commit(staged)
    return staged.changes


def write_together(files: Sequence[tuple[Path, str | bytes]]) -> list[tuple[Path, bool]]:
    """Write several files so that they change together: every one is written to its temporary file
    first, and only when all of them are there are they renamed into place, one after the other. A
    failure before the renames (a full disk, a refused path) leaves every file as it was; what remains
    is the moment the renames take. Returns each path and whether it changed."""
    staged: list[Staged] = []
    try:
        for path, text in files:
            staged.append(stage(path, text))
    except BaseException:
        for each in staged:
            discard(each)
        raise
    for each in staged:
        commit(each)
    return [(each.path, each.changes) for each in staged]


@dataclass(slots=True)
class Staged:
    """A write prepared by `stage`, done by `commit` (or undone by `discard`)."""

    path: Path
    data: bytes
    temp: str | None = None  # the temporary file beside `path`, renamed over it by `commit`
    stream: bool = False  # a device or FIFO: written in place by `commit`
    edit_of: FileVersion | None = None

    @property
    def changes(self) -> bool:
        return self.temp is not None or self.stream


def stage(path: Path, text: str | bytes, *, edit_of: FileVersion | None = None) -> Staged:
    """Everything of `write_atomically` but the rename: the new text in a temporary file beside `path`
    (written and flushed to disk), or nothing when `path` already holds it."""
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    try:
        info = _lstat(path)
        if info is not None and not stat.S_ISREG(info.st_mode):
            target = _stat(path) if stat.S_ISLNK(info.st_mode) else info
            if target is not None and (stat.S_ISCHR(target.st_mode) or stat.S_ISFIFO(target.st_mode)):
                return Staged(path, data, stream=True)
            raise ExportError(_refusal(path, info))
        if info is not None and read_regular(path) == data:
            return Staged(path, data)
        if edit_of is not None:
            _check_editable(path, info)
        path.parent.mkdir(parents=True, exist_ok=True)
        # mkstemp makes the file private; the result keeps the old file's mode, or gets the usual one.
        mode = info.st_mode & 0o7777 if info is not None else 0o666 & ~_umask()
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            if info is not None:
                _keep_owner(temp, info)
            # By path, not os.fchmod, which Windows lacks; there it only sets or clears read-only.
            os.chmod(temp, mode)
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return Staged(path, data, temp=temp, edit_of=edit_of)


def commit(staged: Staged) -> None:
    path = staged.path
    try:
        if staged.stream:
            _write_stream(path, staged.data)
            return
        if staged.temp is None:
            return
        try:
            # As late as can be: what is saved between this check and the rename (microseconds) is the
            # one save still lost; no editor takes a lock that would close that window.
            if staged.edit_of is not None and not _still(path, staged.edit_of):
                raise ExportError(
                    f"{path} changed while zotsync was editing it (saved, replaced or removed by another "
                    "program); nothing written, so that change is kept — run the command again"
                )
            os.replace(staged.temp, path)
        except BaseException:
            discard(staged)
            raise
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from exc


def discard(staged: Staged) -> None:
    if staged.temp is not None:
        Path(staged.temp).unlink(missing_ok=True)


def _check_editable(path: Path, info: os.stat_result | None) -> None:
    if info is None:
        return  # gone: `_still` refuses it
    effective = {"effective_ids": True} if os.access in os.supports_effective_ids else {}
    if not os.access(path, os.W_OK, **effective):  # root may write any file: only a user is refused
        raise ExportError(
            f"cannot write {path}: this user may not write it (mode {stat.S_IMODE(info.st_mode):o}), and "
            "zotsync does not replace a file it may not write; nothing written"
        )
    if info.st_nlink > 1:
        raise ExportError(
            f"cannot write {path}: it has {info.st_nlink} hard links, and replacing it would leave the "
            "other names with the old text; nothing written — edit it by hand, or remove the other links"
        )


def _still(path: Path, seen: FileVersion) -> bool:
    """Whether `path` is still the file `seen` was read from, holding the same bytes."""
    try:
        return read_version(path, follow_links=False) == seen
    except OSError:  # removed, or a link or something else in its place
        return False


def _keep_owner(temp: str, info: os.stat_result) -> None:
    """Give the new file the old one's owner and group, as far as this user may: root may give both
    (so a run as root leaves a user's file theirs), another user only a group they belong to."""
    if not hasattr(os, "chown"):  # Windows
        return
    mine = os.stat(temp)
    if (mine.st_uid, mine.st_gid) == (info.st_uid, info.st_gid):
        return
    for uid, gid in ((info.st_uid, info.st_gid), (-1, info.st_gid)):
        try:
            os.chown(temp, uid, gid)
            return
        except OSError:
            continue


def read_regular(path: Path) -> bytes | None:
    """The bytes of a file zotsync writes (CHANGES.md), None when there is none. Never reads through a
    symbolic link or from anything but a regular file: a link planted in the exports folder would
    otherwise publish whatever file it points to."""
    try:
        info = _lstat(path)
        if info is None:
            return None
        if not stat.S_ISREG(info.st_mode):
            raise ExportError(_refusal(path, info))
        # O_NOFOLLOW: a link swapped in since the check fails instead of being followed; O_NONBLOCK: a
        # FIFO swapped in cannot hang the run before fstat tells it apart.
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | _NONBLOCK
        with open(os.open(path, flags | getattr(os, "O_BINARY", 0)), "rb") as stream:
            if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                raise ExportError(f"cannot read {path}: it is no longer a regular file")
            return stream.read()
    except OSError as exc:
        raise ExportError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _write_stream(path: Path, data: bytes) -> None:
    """Write to a device or FIFO in place. A FIFO nobody reads fails at once (ENXIO) instead of
    blocking an unattended run forever."""
    try:
        handle = os.open(path, os.O_WRONLY | _NONBLOCK | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise ExportError(f"cannot write {path}: nothing is reading from it") from exc
        raise
    with open(handle, "wb") as stream:
        if _NONBLOCK:  # now that a reader is there, wait for it rather than fail
            os.set_blocking(handle, True)
        stream.write(data)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except FileNotFoundError:
        return None


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:  # a dangling link
        return None


def _refusal(path: Path, info: os.stat_result) -> str:
    if stat.S_ISLNK(info.st_mode):
        return (
            f"{path} is a symbolic link: zotsync neither follows nor replaces links among the files it "
            "writes (in the exports folder, delete the link; for --output, give the file it points to, "
            "or - for stdout)"
        )
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    kind = next((name for test, name in kinds if test(info.st_mode)), "not a regular file")
    return f"cannot write {path}: it is {kind}; zotsync replaces only regular files"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@dataclass(frozen=True, slots=True)
class FileRecord:
    """A file as zotsync left it: enough to tell, from a `stat`, that it is still that file."""

    size: int
    mtime_ns: int
    sha256: str

    @classmethod
    def of(cls, path: Path, data: bytes | None = None) -> FileRecord | None:
        """None unless `path` is a regular file (a device or FIFO keeps nothing to compare, and reading
        a FIFO back would wait for a writer forever)."""
        try:
            info = path.lstat()
        except OSError:
            return None
        if not _regular(info):
            return None
        digest = hashlib.sha256(data).hexdigest() if data is not None else file_digest(path)
        return cls(info.st_size, info.st_mtime_ns, digest) if digest is not None else None

    def holds(self, path: Path | str) -> bool:
        """Whether `path` is still this file: the same size and modification time, or else (touched, or
        copied back) the same bytes."""
        try:
            info = os.lstat(path)
        except OSError:
            return False
        if not _regular(info) or info.st_size != self.size:
            return False
        return info.st_mtime_ns == self.mtime_ns or file_digest(Path(path)) == self.sha256


def _regular(info: os.stat_result) -> bool:
    return stat.S_ISREG(info.st_mode)
