"""The use cases the CLI offers, wiring config, source, store, reconciler and exporters together."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import load_catalogue
from .config import Config
from .errors import StoreError
from .export import RENDERERS, Page, write_atomically
from .model import Catalogue, Placement
from .reconcile import Options, Reconciliation, reconcile
from .reconcile.venue import load_venue_table
from .sources import open_source
from .store import Store, exclusive_lock
from .sync import PullReport, pull


@contextlib.contextmanager
def open_store(config: Config, must_exist: bool = False) -> Iterator[Store]:
    if must_exist and not config.store.exists():
        raise StoreError(f"no store at {config.store}: run `zotsync pull` first")
    store = Store(config.store)
    try:
        yield store
    finally:
        store.close()


def run_pull(config: Config, full: bool = False) -> PullReport:
    source = open_source(config.source)
    with exclusive_lock(config.store), open_store(config) as store:
        return pull(source, store, full=full)


@dataclass(frozen=True, slots=True)
class Merged:
    page: Page
    reconciliation: Reconciliation


def merge(config: Config, catalogue: Catalogue, store: Store) -> Merged:
    settings = config.reconcile
    options = Options(
        read_tags=settings.read_tags,
        archive_link=config.exports.archive_link,
        venues=load_venue_table(settings.venues) if settings.abbreviate_venues else None,
    )
    reconciliation = reconcile(catalogue, store.load(), options)
    return Merged(Page(catalogue.title, catalogue.description, reconciliation.placements), reconciliation)


def default_output(config: Config, fmt: str) -> Path:
    return config.exports.dir / f"catalog.{fmt}"


def render(config: Config, fmt: str) -> str:
    catalogue = load_catalogue(config.catalog)
    with open_store(config, must_exist=True) as store:
        return RENDERERS[fmt](merge(config, catalogue, store).page)


def run_sync(config: Config) -> tuple[PullReport, list[tuple[Path, bool]]]:
    """pull, then every configured export; the lock covers both so two cron runs never interleave."""
    catalogue = load_catalogue(config.catalog)  # a broken catalogue fails before any request
    source = open_source(config.source)
    with exclusive_lock(config.store), open_store(config) as store:
        report = pull(source, store)
        page = merge(config, catalogue, store).page
        written = []
        for fmt in config.exports.formats:
            path = default_output(config, fmt)
            written.append((path, write_atomically(path, RENDERERS[fmt](page))))
    return report, written


def status(config: Config) -> dict[str, Any]:
    catalogue = load_catalogue(config.catalog)
    with open_store(config, must_exist=True) as store:
        merged = merge(config, catalogue, store)
        library = store.load()
        state = {name: store.state(name) for name in ("library_version", "last_sync_at", "source")}
    rows = merged.page.rows
    matches = merged.reconciliation.matches
    return {
        "library": {
            "version": int(state["library_version"]) if state["library_version"] else None,
            "last_sync_at": state["last_sync_at"],
            "items": sum(1 for i in library.items if i.is_regular and not i.deleted),
            "trashed": sum(1 for i in library.items if i.is_regular and i.deleted),
            "collections": len(library.collections),
        },
        "catalogue": {
            "entries": len(rows),
            "read": sum(r.status == "read" for r in rows),
            "unread": sum(r.status == "unread" for r in rows),
            "curated": sum(r.curated for r in rows),
            "matched": len(matches.by_title),
            "categories": len(dict.fromkeys(r.category for r in rows)),
        },
        "unmatched": [
            {
                "title": u.title,
                "reason": u.reason,
                "nearest": [{"zotero_key": c.key, "title": c.title, "score": c.score} for c in u.nearest],
            }
            for u in matches.unmatched
        ],
        "ambiguous": [
            {"rule": a.rule, "titles": list(a.titles), "zotero_keys": list(a.item_keys)}
            for a in matches.ambiguities
        ],
        "duplicates": [
            {"reason": d.reason, "title": d.title, "zotero_keys": list(d.item_keys)}
            for d in matches.duplicates
        ],
        "inbox": inbox(config, rows),
        "status_conflicts": [
            {"title": t, "curated": c, "zotero": z} for t, c, z in merged.reconciliation.status_conflicts
        ],
    }


def inbox(config: Config, rows: Sequence[Placement]) -> list[dict[str, str]]:
    """Uncurated items in an inbox collection (or below it) or carrying an inbox tag: candidates for
    the curator's next `zotsync adopt`."""
    paths = config.reconcile.inbox_collections
    tags = set(config.reconcile.inbox_tags)
    found: dict[str, dict[str, str]] = {}
    for row in rows:
        in_collection = any(c == p or c.startswith(p + " / ") for c in row.collections for p in paths)
        if not row.curated and (in_collection or tags & set(row.tags)):
            found.setdefault(row.zotero_key, {"zotero_key": row.zotero_key, "title": row.title})
    return list(found.values())
