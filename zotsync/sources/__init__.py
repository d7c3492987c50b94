"""Zotero sources. Each turns its own records into model objects and reports changes since a version."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..config import DEFAULT_DEADLINE, SourceConfig
from .base import Source
from .snapshot import SnapshotSource


@contextlib.contextmanager
def open_source(
    config: SourceConfig, progress: bool = False, deadline: float = DEFAULT_DEADLINE
) -> Iterator[Source]:
    """The configured source, closed after use (the web source holds an HTTP connection pool);
    `progress` lets a long web pull draw a bar on a terminal; `deadline` (seconds) bounds a pull over
    HTTP. `type: local` with a `base_url` is the desktop's local API, read by the web source."""
    if config.type == "web" or config.local_api:
        from .web import WebSource  # imports pyzotero, which the other sources do not need

        with WebSource(config, progress=progress, deadline=deadline) as web:
            yield web
        return
    assert config.path is not None  # guaranteed by config validation
    if config.type == "local":
        from .local import LocalSource

        yield LocalSource(config.path, config.library_type, config.library_id)
    else:
        yield SnapshotSource(config.path)


__all__ = ["SnapshotSource", "Source", "open_source"]
