"""zotsync: keep a curated research reading list in sync with a Zotero library.

The Python API (docs/python-api.md), the same use cases the command line runs:

    import zotsync
    config = zotsync.load_config("zotsync.yaml")   # or load_config() for the usual search
    result = zotsync.sync(config)                   # what `zotsync sync` does; also zotsync.pull(config)
    frame = zotsync.catalogue_frame(config)         # a pandas DataFrame: one row per placement
    report = zotsync.status(config)                 # what `zotsync status` reports
    hits = zotsync.search(config, "warp specialization")   # full-text search: one hit per paper

Each function imports what it needs when called, so `import zotsync` stays light (no pandas, no store);
the public types (`Config`, the result types, `ZotsyncError`, and `Exporter`, `Output`, `Processor`,
`SourceType` for plugins, docs/plugins.md) are imported from their modules when first named here.
Failures raise `zotsync.ZotsyncError` subclasses, whose message is the command line's one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    import pandas

    from .app.enrich import EnrichResult, ItemAnswer
    from .app.fulltext import PaperText
    from .app.hits import SearchHit
    from .app.listing import Listed
    from .app.meaning import Related
    from .app.pull import PullReport
    from .app.status import CatalogueSummary, EnrichmentSummary, LibrarySummary, StatusReport
    from .app.sync import SyncResult
    from .config import Config
    from .errors import ConfigError, ExportError, SourceError, StoreError, ZotsyncError
    from .formats import Exporter, Output
    from .processing import Processor, Report
    from .sources import SourceType
    from .store.landing import ApplyResult

# The public types, by the module that defines each: imported when first asked for (`zotsync.Config`).
_TYPES = {
    "Config": "zotsync.config",
    "ZotsyncError": "zotsync.errors",
    "ConfigError": "zotsync.errors",
    "SourceError": "zotsync.errors",
    "StoreError": "zotsync.errors",
    "ExportError": "zotsync.errors",
    "PullReport": "zotsync.app.pull",
    "ApplyResult": "zotsync.store.landing",
    "SyncResult": "zotsync.app.sync",
    "StatusReport": "zotsync.app.status",
    "LibrarySummary": "zotsync.app.status",
    "CatalogueSummary": "zotsync.app.status",
    "EnrichmentSummary": "zotsync.app.status",
    "Report": "zotsync.processing",
    "EnrichResult": "zotsync.app.enrich",
    "ItemAnswer": "zotsync.app.enrich",
    "SearchHit": "zotsync.app.hits",
    "Related": "zotsync.app.meaning",
    "PaperText": "zotsync.app.fulltext",
    "Listed": "zotsync.app.listing",
    "Exporter": "zotsync.formats",
    "Output": "zotsync.formats",
    "Processor": "zotsync.processing",
    "SourceType": "zotsync.sources",
}

__all__ = [
    "ApplyResult",
    "CatalogueSummary",
    "Config",
    "ConfigError",
    "EnrichResult",
    "EnrichmentSummary",
    "ExportError",
    "Exporter",
    "ItemAnswer",
    "LibrarySummary",
    "Listed",
    "Output",
    "PaperText",
    "Processor",
    "PullReport",
    "Related",
    "Report",
    "SearchHit",
    "SourceError",
    "SourceType",
    "StatusReport",
    "StoreError",
    "SyncResult",
    "ZotsyncError",
    "__version__",
    "catalogue_frame",
    "enrich",
    "fulltext",
    "load_config",
    "pull",
    "related",
    "search",
    "status",
    "sync",
]


def related(config: Config, key: str, *, limit: int = 10) -> list[Related]:
    """The papers of the library nearest in meaning to the paper `key` (`zotsync related`), best first,
    never `key`: each with `zotero_key`, `title`, `score` (cosine similarity) and `categories`. Needs
    `search.semantic: true` and a sync since (raises `ConfigError` saying so otherwise)."""
    from .app.meaning import related as nearest

    return nearest(config, key, limit)


def __getattr__(name: str) -> Any:
    """A public type, imported from its module the first time it is named."""
    module = _TYPES.get(name)
    if module is None:
        raise AttributeError(f"module 'zotsync' has no attribute '{name}'")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_config(path: str | Path | None = None) -> Config:
    """The config at `path`; without one, the command line's search: $ZOTSYNC_CONFIG, ./zotsync.yaml,
    ./config/zotsync.yaml, then the user's config folder."""
    from .config import find_config
    from .config import load_config as load

    return load(Path(path).expanduser() if path is not None else find_config())


def pull(config: Config, *, full: bool = False, force: bool = False) -> PullReport:
    """Bring the store up to date with the source (`zotsync pull`)."""
    from .app.pull import run_pull

    return run_pull(config, full=full, force=force)


def sync(config: Config, *, full: bool = False, force: bool = False) -> SyncResult:
    """Pull, then write every format in `exports.formats` and CHANGES.md (`zotsync sync`)."""
    from .app.sync import run_sync

    return run_sync(config, full=full, force=force)


def status(config: Config) -> StatusReport:
    """Counts, the last sync and the reconciliation's findings (`zotsync status`)."""
    from .app.status import status as report

    return report(config)


def enrich(config: Config, *, dry_run: bool = False, refresh: bool = False) -> EnrichResult:
    """Fill in missing venues, years and DOIs from the metadata services now (`zotsync enrich`): titles
    and first authors leave the machine (docs/enrichment.md)."""
    from .app.enrich import run_enrich

    return run_enrich(config, dry_run=dry_run, refresh=refresh)


def catalogue_frame(config: Config) -> pandas.DataFrame:
    """The page's rows as a pandas DataFrame, one row per placement, with the CSV's columns: values as
    they are (no spreadsheet guard), `year` a nullable integer, `noted` a bool, and `authors`, `tags`
    and `collections` lists. Reads the store as the last pull left it (run `pull` or `sync` first)."""
    from .app.frame import catalogue_frame as frame

    return frame(config)


def search(config: Config, text: str, *, limit: int = 20) -> list[SearchHit]:
    """Full-text search of the store (`zotsync search`): the papers whose titles, authors, abstracts,
    tags, curated why, notes and annotations hold every word of `text`, best first, one hit per paper;
    each with `zotero_key` (empty for a curated entry no item matches), `title`, `categories` (a list),
    `where` it matched and a `snippet`. Reads the store as the last pull left it."""
    from .app.search import search as find

    return find(config, text, limit)


def fulltext(config: Config, key: str, query: str | None = None, max_chars: int = 20_000) -> PaperText:
    """The PDF text of paper `key` as the store holds it (`fulltext.enabled`): its attachments' texts one
    after the other, or with `query` only the passages holding the query's words, at most `max_chars`
    characters (`truncated` says when there was more). A key without text is a ConfigError naming it."""
    from .app.fulltext import fulltext as text_of

    return text_of(config, key, query, max_chars)
