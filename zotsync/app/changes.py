"""The change digest, `CHANGES.md`: what each sync changed on the page, newest first."""

from __future__ import annotations

from pathlib import Path

from .. import digest
from ..config import Config
from ..errors import ExportError
from ..export import Page
from ..outputs import read_regular, write_atomically
from ..store import Store


def changes_path(config: Config) -> Path:
    return config.exports.dir / "CHANGES.md"


def record_changes(
    config: Config, store: Store, page: Page, clock: digest.Clock = digest.utc_now
) -> list[tuple[Path, bool]]:
    """Prepend what this sync changed on the page to CHANGES.md, then remember the page for the next
    sync. The first sync only records the baseline; a sync that changed nothing leaves the file alone.
    The rows are replaced after the file is written, so a failed write is retried by the next sync."""
    current = digest.rows_of(page.rows)
    stored = store.catalogue_rows()
    previous = None if stored is None else tuple(digest.Row(*row) for row in stored)
    written = []
    changes = digest.diff(previous, current) if previous is not None else None
    if changes:
        path = changes_path(config)
        try:
            old = (read_regular(path) or b"").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ExportError(f"cannot read {path}: {exc}") from exc
        written.append((path, write_atomically(path, digest.prepend(digest.render(changes, clock()), old))))
    if previous != current:
        store.replace_catalogue_rows(row.astuple() for row in current)
    return written
