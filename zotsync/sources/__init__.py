"""Zotero sources. Each turns its own records into model objects and reports changes since a version."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..config import SourceConfig
from .base import Source
from .snapshot import SnapshotSource


@contextlib.contextmanager
def open_source(config: SourceConfig, progress: bool = False) -> Iterator[Source]:
    """The configured source, closed after use (the web source holds an HTTP connection pool);
    `progress` lets a long web pull draw a bar on a terminal."""
    if config.type == "web":
        from .web import WebSource  # imports pyzotero, which the other sources do not need

        with WebSource(config, progress=progress) as web:
            yield web
        return
    assert config.path is not None  # guaranteed by config validation
    if config.type == "local":
        from .local import LocalSource

        yield LocalSource(config.path, config.library_type, config.library_id)
    else:
        yield SnapshotSource(config.path)


__all__ = ["SnapshotSource", "Source", "open_source"]
