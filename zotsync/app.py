"""The use cases the CLI offers, wiring config, source, store, reconciler and exporters together."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

from . import catalog_edit, digest, formats, normalize
from .catalog import CatalogueFile, load_catalogue
from .config import Config
from .errors import ExportError, StoreError
from .export import ExportInput, LinkPlan, Page, page_text
from .export.record import ExportRecord, export_inputs
from .export.writer import write_exports
from .formats import Needs
from .gcpause import bulk_phase
from .inputs import MAX_YAML, read_input_version, why_unreadable
from .model import Catalogue, CatalogueEntry, Item, Library, Placement, in_collections
from .outputs import FileVersion, read_regular, write_atomically
from .reconcile import MatchResult, Options, Reconciliation, reconcile
from .reconcile.categories import near_duplicates
from .reconcile.venue import load_venue_table
from .sources import open_source
from .store import Store, exclusive_lock
from .sync import PullReport, pull
from .text import blank


@contextlib.contextmanager
def open_store(config: Config, must_exist: bool = False, readonly: bool = False) -> Iterator[Store]:
    """The configured store. `readonly` (status, export, list): never creates, upgrades or writes it.
    Those and `must_exist` need a store some pull filled; a store this call creates for a pull that then
    fails is removed again, so a first pull refused by its source leaves no empty store behind."""
    created = not config.store.exists()
    if (must_exist or readonly) and created:
        raise StoreError(f"no store at {config.store}: run `zotsync pull` first")
    store = Store(config.store, readonly=readonly)
    unfilled = False
    try:
        if (must_exist or readonly) and store.library_version is None:
            raise StoreError(f"the store at {config.store} holds no finished pull: run `zotsync pull`")
        yield store
    except BaseException:
        unfilled = created and store.library_version is None
        raise
    finally:
        store.close()
        if unfilled:  # ours, made by this run a moment ago, and empty
            for path in (config.store, *(config.store.with_name(config.store.name + s) for s in WAL_FILES)):
                path.unlink(missing_ok=True)


WAL_FILES = ("-wal", "-shm", "-journal")


def run_pull(config: Config, full: bool = False, progress: bool = False, force: bool = False) -> PullReport:
    """`force`: past the safety valve (`sync.max_removal`) for this one pull."""
    with (
        open_source(config.source, progress, config.sync.deadline) as source,
        exclusive_lock(config.store),
        open_store(config) as store,
        bulk_phase(),
    ):
        return pull(source, store, full=full, max_removal=_valve(config, force))


def _valve(config: Config, force: bool) -> float | None:
    return None if force else config.sync.max_removal


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What one `sync` did: the pull, each file it wrote (or found unchanged), and the HTTP requests
    the source sent (0 for local sources)."""

    pull: PullReport
    written: tuple[tuple[Path, bool], ...]
    requests: int = 0

    @property
    def changed(self) -> bool:
        """Whether any export file changed."""
        return any(wrote for _, wrote in self.written)

    def summary(self, duration_s: float) -> dict[str, Any]:
        """The one JSON object `sync --json` prints (docs/commands.md lists every field)."""
        counts = self.pull.result
        return {
            "changed": self.changed,
            "library_version": self.pull.to_version,
            "previous_version": self.pull.from_version,
            "requests": self.requests,
            "files": [str(path) for path, wrote in self.written if wrote],
            "unchanged": [str(path) for path, wrote in self.written if not wrote],
            "duration_s": round(duration_s, 3),
            "items_added": counts.items_added,
            "items_updated": counts.items_updated,
            "items_removed": counts.items_removed,
            "collections_changed": counts.collections_changed,
            "collections_removed": counts.collections_removed,
        }


@dataclass(frozen=True, slots=True)
class Merged:
    page: Page
    reconciliation: Reconciliation
    library: Library


def merge(
    config: Config, catalogue: Catalogue, store: Store, creators: bool = True, links: bool = True
) -> Merged:
    """The page of `catalogue` and the store's library; without `creators`, the library's items may
    lack their creators (see `Store.load_page`): for callers that use only the page and counts; without
    `links`, the rows lack Zotero's links (for a report or a format that shows none), and the library its
    attachments, which only those links read."""
    settings = config.reconcile
    options = Options(
        read_tags=settings.read_tags,
        archive_link=config.exports.archive_link,
        venues=load_venue_table(settings.venues) if settings.abbreviate_venues else None,
        zotero_links=links,
    )
    library = store.load_page(creators, attachments=links)
    reconciliation = reconcile(catalogue, library, options)
    page = Page(catalogue.title, catalogue.description, reconciliation.placements, config.exports.labels)
    return Merged(page, reconciliation, library)


def _merge_for(config: Config, catalogue: Catalogue, store: Store, names: Sequence[str]) -> Merged:
    """The page with no more than the exporters `names` need (formats.Needs)."""
    needs = formats.needs(names)
    return merge(
        config,
        catalogue,
        store,
        creators=bool(needs & Needs.CREATORS),
        links=bool(needs & Needs.ZOTERO_LINKS),
    )


def default_output(config: Config, fmt: str) -> Path:
    return config.exports.dir / formats.get(fmt).page


def render(config: Config, fmt: str) -> str:
    """The page of the format `fmt` (what `export --output` writes)."""
    catalogue = load_catalogue(config.catalog, config.path)
    with open_store(config, readonly=True) as store, bulk_phase():
        merged = _merge_for(config, catalogue, store, [fmt])
        return page_text(formats.get(fmt), ExportInput(merged.page, merged.library, _plan(config)))


def _plan(config: Config) -> LinkPlan:
    return LinkPlan(pages={name: formats.get(name).page for name in config.exports.formats})


def run_sync(
    config: Config,
    clock: digest.Clock = digest.utc_now,
    progress: bool = False,
    full: bool = False,
    force: bool = False,
) -> SyncResult:
    """pull, then every configured export and the change digest; the lock covers all of it so two cron
    runs never interleave. When the pull changed nothing and every input of the page is as the last
    sync left it (see `export.record`), the exports are not rendered again: they would be the same
    bytes."""
    catalogue_file = CatalogueFile.read(config.catalog, config.path)  # read once: digest and page agree
    inputs = export_inputs(config, catalogue_file.digest)
    names = config.exports.formats
    pages = [default_output(config, name) for name in names]
    with (
        open_source(config.source, progress, config.sync.deadline) as source,
        exclusive_lock(config.store),
        open_store(config) as store,
    ):
        last = ExportRecord.loads(store.sync_state.export_record)
        # The catalogue a sync exported from was valid; any other must parse before any request.
        catalogue = None if last and last.inputs == inputs else catalogue_file.load()
        with bulk_phase():
            report = pull(source, store, full=full, max_removal=_valve(config, force))
        files = store.export_files()
        expected = {path: files.get(str(path)) for path in pages} | {Path(p): r for p, r in files.items()}
        if last is not None and last.still_holds(inputs, store.generation, expected):
            return SyncResult(report, tuple((path, False) for path in pages), source.requests)
        store.remember(export_record=None)  # a run that stops half-way leaves no claim behind
        with bulk_phase():
            merged = _merge_for(config, catalogue or catalogue_file.load(), store, names)
            given = ExportInput(merged.page, merged.library, _plan(config))
            made = [list(formats.get(name).render(given)) for name in names]
            result = write_exports(
                config.exports.dir,
                [outputs[0] for outputs in made],
                [output for outputs in made for output in outputs[1:]],
                files,
            )
            written = result.written + record_changes(config, store, merged.page, clock)
        record = ExportRecord(inputs, store.generation)
        store.record_export(record.dumps(), result.records)
    return SyncResult(report, tuple(written), source.requests)


def status(config: Config) -> dict[str, Any]:
    # The report walks the whole page and library again: keep the collector paused for it too (resumed
    # earlier, it scanned the million objects still alive, ~1.4 s at 100k items).
    with bulk_phase():
        return _status_report(config)


def _status_report(config: Config) -> dict[str, Any]:
    catalogue = load_catalogue(config.catalog, config.path)
    with open_store(config, readonly=True) as store:
        merged = merge(config, catalogue, store, creators=False, links=False)  # the report shows no links
        state = store.sync_state
    rows, library = merged.page.rows, merged.library
    matches = merged.reconciliation.matches
    # Each count in one pass, most of them in C: a 100k-item page has as many rows.
    curated = [r for r in rows if r.curated]
    claimed = {r.zotero_key for r in curated}
    statuses = Counter(map(attrgetter("status"), rows))
    headings = dict.fromkeys(map(attrgetter("category"), rows))
    return {
        "library": {
            "type": state.library_type,
            "id": state.library_id,
            "kind": (state.source or "").partition(":")[0],  # web, local or snapshot
            "name": state.library_name,
            "source": origin(state.source or ""),
            "version": state.library_version,
            "last_sync_at": state.last_sync_at,
            "items": len(matches.candidates),  # the regular items not in the trash
            "trashed": sum(1 for i in library.items if i.deleted and i.is_regular),
            "collections": len(library.collections),
            # items no curated entry claims, inbox or not: what `zotsync list --uncurated` shows
            "uncurated": len(set(map(attrgetter("zotero_key"), rows)) - claimed - {""}),
        },
        "catalogue": {
            "entries": len(rows),
            "read": statuses["read"],
            "unread": statuses["unread"],
            "curated": len(curated),
            "matched": len(matches.by_title),
            "categories": len(headings),
        },
        "matches": matched_entries(catalogue, matches),
        "fuzzy_matches": fuzzy_matches(catalogue, matches),
        "unmatched": [
            {
                "title": u.title,
                "reason": u.reason,
                "nearest": [{"zotero_key": c.key, "title": c.title, "score": c.score} for c in nearest],
            }
            for u in matches.unmatched
            for nearest in [matches.nearest(u.title)]
        ],
        "ambiguous": [
            {"rule": a.rule, "titles": list(a.titles), "zotero_keys": list(a.item_keys)}
            for a in matches.ambiguities
        ],
        "duplicates": [
            {"reason": d.reason, "title": d.title, "zotero_keys": list(d.item_keys)}
            for d in matches.duplicates
        ],
        # A heading one typo from another is a section nobody meant (a collection named `LLM inferance`)
        "near_duplicate_categories": [{"names": list(pair)} for pair in near_duplicates(headings)],
        "inbox": inbox(config, rows),
        "untitled": untitled(rows),
        "status_conflicts": [
            {"title": t, "curated": c, "zotero": z} for t, c, z in merged.reconciliation.status_conflicts
        ],
    }


def origin(source_id: str) -> str:
    """Where a source id says the library came from: the file, or the Web API's URL."""
    kind, _, where = source_id.partition(":")
    return where.partition("#")[0] if kind in ("local", "snapshot") else where


def untitled(rows: Sequence[Placement]) -> list[dict[str, Any]]:
    """Zotero items whose title is empty (or only spaces and controls), with the categories they are
    in: the page shows the `no_title` placeholder for them until the curator gives them a title."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.zotero_key and blank(row.title):
            found.setdefault(row.zotero_key, {"zotero_key": row.zotero_key, "categories": []})[
                "categories"
            ].append(row.category)
    return list(found.values())


def inbox(config: Config, rows: Sequence[Placement]) -> list[dict[str, str]]:
    """Uncurated items in an inbox collection (or below it) or carrying an inbox tag: candidates for
    the curator's next `zotsync adopt`."""
    paths = config.reconcile.inbox_collections
    tags = set(config.reconcile.inbox_tags)
    found: dict[str, dict[str, str]] = {}
    if not paths and not tags:
        return []  # no inbox configured: nothing to walk 100k rows for
    for row in rows:
        if not row.curated and (
            (paths and in_collections(row.collections, paths)) or not tags.isdisjoint(row.tags)
        ):
            found.setdefault(row.zotero_key, {"zotero_key": row.zotero_key, "title": row.title})
    return list(found.values())


def matched_entries(catalogue: Catalogue, matches: MatchResult) -> list[dict[str, str]]:
    """Each matched curated paper with its item and the rule that matched it, in catalogue order."""
    titles = curated_titles(catalogue.entries)
    return [
        {"title": title, "zotero_key": matches.by_title[key].key, "rule": matches.rule.get(key, "")}
        for key, title in titles.items()
        if key in matches.by_title
    ]


# -- the change digest (CHANGES.md) --------------------------------------------------------------------


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


# -- editing the catalogue: pin and adopt ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CatalogueEdit:
    path: Path
    written: bool
    messages: tuple[str, ...]  # what happened, one line each, for the user


def pin(config: Config, target: str, zotero_key: str, force: bool = False) -> CatalogueEdit:
    """Record the curator's match: `zotero_key` on every placement of the entry titled `target` (or
    pinned to the key `target`). Holds the run lock, so a concurrent sync never reads half an edit."""
    with exclusive_lock(config.store), open_store(config, must_exist=True) as store, bulk_phase():
        doc, version = _read_catalogue(config)
        catalogue = doc.catalogue
        merged = merge(config, catalogue, store)
        item = _regular_item(merged.library.items, zotero_key)
        result = catalog_edit.pin(doc, target, item.key, force=force)
        wanted = normalize.title(result.title)
        entries = catalogue.entries  # a tuple built per call: once here
        others = [e for e in entries if e.zotero_key == item.key and normalize.title(e.title) != wanted]
        if others:
            raise catalog_edit.CatalogEditError(
                f"{item.key} is already pinned to '{others[0].title}' under '{others[0].category}'; "
                "remove that pin first"
            )
        matches = merged.reconciliation.matches
        titles = curated_titles(entries)
        messages = [
            f"note: {item.key} was matched to '{titles.get(key, key)}' (by {matches.rule.get(key, '?')}); "
            "that entry loses its match"
            for key, matched in matches.by_title.items()
            if matched.key == item.key and key != wanted
        ]
        written = write_atomically(config.catalog, result.text, edit_of=version)
    where = ", ".join(f"'{c}'" for c in result.categories)
    if not written:
        messages.append(f"'{result.title}' is already pinned to {item.key}; {config.catalog} unchanged")
    else:
        replaced = f", replacing {', '.join(result.replaced)}" if result.replaced else ""
        messages.append(
            f"pinned '{result.title}' under {where} to {item.key} ('{item.title}'){replaced}; "
            f"wrote {config.catalog}"
        )
    return CatalogueEdit(config.catalog, written, tuple(messages))


def adopt(config: Config, zotero_key: str, category: str, new_category: bool = False) -> CatalogueEdit:
    """Add a Zotero item to the catalogue as a new curated entry at the end of `category`."""
    with exclusive_lock(config.store), open_store(config, must_exist=True) as store, bulk_phase():
        doc, version = _read_catalogue(config, for_adopt=True)
        catalogue = doc.catalogue
        # a mistyped category fails before the library is loaded, with the names it may have meant
        catalog_edit.check_category([c.name for c in catalogue.categories], category, new_category)
        merged = merge(config, catalogue, store)
        item = _regular_item(merged.library.items, zotero_key)
        matches = merged.reconciliation.matches
        for key, matched in matches.by_title.items():
            if matched.key == item.key:
                entries = [e for e in catalogue.entries if normalize.title(e.title) == key]
                places = ", ".join(dict.fromkeys(f"'{e.category}'" for e in entries))
                raise catalog_edit.CatalogEditError(
                    f"{item.key} is already in the catalogue under {places} as '{entries[0].title}'"
                )
        result = catalog_edit.adopt(doc, category, item.title, item.key, create_category=new_category)
        written = write_atomically(config.catalog, result.text, edit_of=version)
    messages = []
    if result.created_category:
        messages.append(f"added the category '{result.categories[0]}' at the end of the catalogue")
    messages.append(
        f"added '{result.title}' ({item.key}) to '{result.categories[0]}'; "
        f"{'wrote' if written else 'unchanged'} {config.catalog}"
    )
    return CatalogueEdit(config.catalog, written, tuple(messages))


def fuzzy_matches(catalogue: Catalogue, matches: MatchResult) -> list[dict[str, Any]]:
    """Each curated paper matched by a fuzzy title, a guess for the curator to check, in catalogue
    order: its title beside the item's, so that a wrong guess shows."""
    fuzzy = matches.fuzzy
    return [
        {"title": title, "zotero_key": c.key, "zotero_title": c.title, "score": c.score}
        for key, title in curated_titles(catalogue.entries).items()
        if (c := fuzzy.get(key)) is not None
    ]


def curated_titles(entries: Sequence[CatalogueEntry]) -> dict[str, str]:
    """Normalised curated title → the first curated spelling of it, in one pass."""
    titles: dict[str, str] = {}
    for entry in entries:
        titles.setdefault(normalize.title(entry.title), entry.title)
    return titles


def _read_catalogue(config: Config, for_adopt: bool = False) -> tuple[catalog_edit.Document, FileVersion]:
    """The catalogue file parsed once, for matching and for the edit (its exact text, line endings kept,
    so an edit keeps them), and the version of the file it was read from: reconciling takes seconds on
    a large library, and the write must not replace what the curator saves meanwhile."""
    try:
        version = read_input_version(config.catalog, "the catalogue", MAX_YAML, catalog_edit.CatalogEditError)
    except FileNotFoundError:
        load_catalogue(config.catalog, config.path)  # the usual error, naming the config's line
        raise
    try:
        text = version.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = why_unreadable(config.catalog, exc)
        raise catalog_edit.CatalogEditError(f"cannot read the catalogue {config.catalog}: {problem}") from exc
    return catalog_edit.Document(text, str(config.catalog), for_adopt=for_adopt), version


def _regular_item(items: Sequence[Item], key: str) -> Item:
    """The item a pin or an adoption names: it must be in the store, top-level, and not in the trash."""
    key = key.strip().upper()
    catalog_edit.check_key(key)
    item = next((i for i in items if i.key == key), None)
    if item is None:
        raise catalog_edit.CatalogEditError(
            f"no Zotero item {key} in the store (run `zotsync pull` if it was added since the last sync)"
        )
    if item.deleted:
        raise catalog_edit.CatalogEditError(f"the Zotero item {key} is in the trash")
    if not item.is_regular:
        kind = "a child item" if item.parent_key else f"a standalone {item.item_type}"
        raise catalog_edit.CatalogEditError(f"{key} is {kind}, not a top-level item")
    return item
