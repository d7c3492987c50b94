"""What a sync exported, so that the next one can tell that nothing can have changed.

A sync whose pull changed nothing would render the same bytes again if the catalogue, the config, the
venue table, zotsync's own code and the store's content are what the last export saw — and the files
on disk are still the ones it wrote. `ExportRecord` (in zotsync/plan.py, which decides what an export
may reuse) remembers the first — the export's inputs, made here, and the store's content generation; the
store's `export_files` table remembers the second (each file's size, modification time and SHA-256).
Anything that differs, or cannot be read, means "render again", never "skip".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import fingerprints
from ..inputs import file_digest
from ..plan import ExportRecord

__all__ = ["ExportRecord", "export_inputs"]

if TYPE_CHECKING:
    from ..config import Config


def export_inputs(config: Config, catalogue_digest: str | None) -> dict[str, str]:
    """The digests of what the page is made of, apart from the store."""
    venues = config.reconcile.venues if config.reconcile.abbreviate_venues else None
    return {
        "code": fingerprints.code_digest(),
        "config": fingerprints.config_digest(config),
        "catalogue": catalogue_digest or "unreadable",
        "venues": (file_digest(venues) or "unreadable") if venues else "",
    }
