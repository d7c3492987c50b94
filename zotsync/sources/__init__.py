"""Zotero sources. Each turns its own records into model objects and reports changes since a version."""

from __future__ import annotations

from ..config import SourceConfig
from .base import Source
from .snapshot import SnapshotSource


def open_source(config: SourceConfig, progress: bool = False) -> Source:
    """The configured source; `progress` lets a long web pull draw a bar on a terminal."""
    if config.type == "web":
        from .web import WebSource  # imports pyzotero, which the other sources do not need

        return WebSource(config, progress=progress)
    if config.type == "local":
        from .local import LocalSource

        assert config.path is not None
        return LocalSource(config.path)
    assert config.path is not None  # guaranteed by config validation
    return SnapshotSource(config.path)


__all__ = ["SnapshotSource", "Source", "open_source"]
