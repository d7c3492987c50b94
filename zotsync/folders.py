"""Folders zotsync makes for a file it writes, made so that a failure leaves none of them behind."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Sequence
from pathlib import Path


def make_folders(folder: Path) -> list[Path]:
    """`mkdir -p folder` that returns the folders it made, outermost first (none when it exists), so a
    caller that fails later can `remove_folders` them. A failure part-way removes what it made."""
    missing = [path for path in (folder, *folder.parents) if not path.exists()]
    made: list[Path] = []
    try:
        for path in reversed(missing):
            try:
                path.mkdir()
            except FileExistsError:
                if path.is_dir():  # made meanwhile by another process: not ours to remove
                    continue
                raise
            made.append(path)
        if not folder.is_dir():  # a file stands where the folder should be
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
    except OSError:
        remove_folders(made)
        raise
    return made


def remove_folders(made: Sequence[Path]) -> None:
    """Remove folders `make_folders` made, innermost first, and only while they are still empty."""
    for path in reversed(made):
        with contextlib.suppress(OSError):
            path.rmdir()


def cause(exc: OSError, target: Path) -> str:
    """Why an OS call failed, in the system's words, naming the path that failed when it is not
    `target` itself (the folder above a log file, say), and the file that stands where a folder
    should be."""
    failed = Path(exc.filename) if exc.filename is not None else target
    if isinstance(exc, NotADirectoryError | FileExistsError):
        blocker = next((p for p in (failed, *failed.parents) if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            return f"{blocker} is a file, not a folder"
    reason = exc.strerror or str(exc)
    return reason if failed == target else f"{reason} ({failed})"
