"""The use cases the CLI offers, wiring config, source, store, reconciler and exporters together."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import load_catalogue
from .config import Config
from .errors import StoreError
from .export import RENDERERS, Page, write_atomically
from .model import Catalogue
from .reconcile import Options, Reconciliation, reconcile
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
    options = Options(read_tags=config.reconcile.read_tags, archive_link=config.exports.archive_link)
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
        "unmatched": [{"title": u.title, "reason": u.reason} for u in matches.unmatched],
        "ambiguous": [
            {"rule": a.rule, "titles": list(a.titles), "zotero_keys": list(a.item_keys)}
            for a in matches.ambiguities
        ],
        "status_conflicts": [
            {"title": t, "curated": c, "zotero": z} for t, c, z in merged.reconciliation.status_conflicts
        ],
    }
