"""Exporters: each renders the page rows to text; writing is shared, atomic and byte-stable."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ExportError
from ..model import Placement
from .csv import render_csv
from .labels import Labels, labels_for
from .markdown import render_markdown


@dataclass(frozen=True, slots=True)
class Page:
    title: str
    description: str
    rows: Sequence[Placement]
    labels: Labels = field(default_factory=labels_for)  # the Markdown page's own words


Renderer = Callable[[Page], str]
RENDERERS: dict[str, Renderer] = {
    "md": lambda page: render_markdown(page.title, page.description, page.rows, page.labels),
    "csv": lambda page: render_csv(page.rows),
}


def write_atomically(path: Path, text: str) -> bool:
    """Replace `path` in one rename so a killed run never leaves half a file; skip identical content
    so an unchanged catalogue keeps its file (and its mtime) untouched. Returns whether it wrote."""
    data = text.encode("utf-8")
    try:
        if path.exists() and path.read_bytes() == data:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        # mkstemp makes the file private; the result keeps the old file's mode, or gets the usual one.
        mode = path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask()
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            # By path, not os.fchmod, which Windows lacks; there it only sets or clears read-only.
            os.chmod(temp, mode)
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
