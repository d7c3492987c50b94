"""The exporters and what they share: each format is one module that renders an `ExportInput` into files
(`formats.Exporter`, registered in zotsync/formats.py); `writer` writes what a sync's exporters made;
`record` remembers it, so that an unchanged sync renders nothing."""

from __future__ import annotations

from .. import formats
from ..model import Library
from .base import ExportInput, LinkPlan, Page, page_text

__all__ = ["ExportInput", "LinkPlan", "Page", "page_text", "render_page"]


def render_page(name: str, page: Page, library: Library | None = None) -> str:
    """The page of the format `name` for `page` (its first output), as `export --output -` prints it."""
    return page_text(formats.get(name), ExportInput(page, library or Library()))
