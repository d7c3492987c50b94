"""`zotsync sync`: pull, then every configured export and the change digest, under one lock."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import digest, formats, plan, processing
from ..catalogue import CatalogueFile
from ..config import Config
from ..export.record import ExportRecord, export_inputs
from ..gcpause import bulk_phase
from ..model import Catalogue, Placement
from ..outputs import FileRecord
from ..sources import open_source
from ..store import Store
from .manifest import adopt_manifest, ensure_manifest, write_manifest
from .pull import PullReport, pull, store_for, valve

if TYPE_CHECKING:
    from ..export.writer import WriteResult

# A sync that finds nothing changed renders nothing: the modules that render (reconcile, the exporters,
# the digest of changes, the search index's catalogue side) are imported by the functions that need them,
# so that the cron run that ends at its one 304 does not load them.


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What one `sync` did: the pull, each file it wrote (or found unchanged), and the HTTP requests
    the source sent (0 for local sources)."""

    pull: PullReport
    written: tuple[tuple[Path, bool], ...]
    requests: int = 0
    processed: list[processing.Report] = field(default_factory=list)  # the processors' reports
    removed: tuple[Path, ...] = ()  # the export files it deleted (a dry run: would delete)
    dry_run: bool = False
    due: tuple[str, ...] = ()  # a dry run: the processors the real run would run

    @property
    def changed(self) -> bool:
        """Whether any export file changed."""
        return any(wrote for _, wrote in self.written)

    def summary(self) -> str:
        """One line: what the pull changed and the files written."""
        wrote = sum(wrote for _, wrote in self.written)
        return f"{self.pull.summary()}; {wrote} files written, {len(self.written) - wrote} unchanged"

    def to_dict(self, duration_s: float = 0.0) -> dict[str, Any]:
        """The one JSON object `sync --json` prints (docs/commands.md lists every field), with the run's
        `duration_s`."""
        return {
            "changed": self.changed,
            "requests": self.requests,
            "files": [str(path) for path, wrote in self.written if wrote],
            "unchanged": [str(path) for path, wrote in self.written if not wrote],
            "duration_s": round(duration_s, 3),
            # the versions and the counts as `pull --json` names them (a dry run: with `dry_run`, `valve`)
            **self.pull.to_dict(self.dry_run),
            "processed": processing.report_json(self.processed),  # each processor's counts, by name
            **(self._plan() if self.dry_run else {}),
        }

    def _plan(self) -> dict[str, Any]:
        """What `sync --dry-run --json` adds to the pull's plan: what the real run would delete, and the
        processors it would run."""
        return {
            "remove": [str(path) for path in self.removed],
            "due": list(self.due),
        }


def run_sync(
    config: Config,
    clock: digest.Clock = digest.utc_now,
    progress: bool = False,
    full: bool = False,
    force: bool = False,
    dry_run: bool = False,
) -> SyncResult:
    """pull, then every configured export and the change digest; the lock covers all of it so two cron
    runs never interleave. When the pull changed nothing and every input of the page is as the last
    sync left it (see `export.record`), the exports are not rendered again: they would be the same
    bytes.

    `dry_run`: all of it in a scratch copy of the store, the processors named but not run, and the
    exports planned but not written: the result says what the real run would do, and nothing of the
    user's changes (the store, the exports, the catalogue, the lock keep their bytes)."""
    catalogue_file = CatalogueFile.read(config.catalog, config.path)  # read once: digest and page agree
    inputs = export_inputs(config, catalogue_file.digest)
    names = config.exports.formats
    pages = [config.exports.dir / formats.page(name) for name in names]
    with (
        open_source(config.source, progress, config.sync.deadline) as source,
        store_for(config, dry_run) as store,
    ):
        last = ExportRecord.loads(store.sync_state.export_record)
        # The catalogue a sync exported from was valid; any other must parse before any request.
        catalogue = None if last and last.inputs == inputs else catalogue_file.load()
        with bulk_phase():
            report = pull(
                source,
                store,
                full=full,
                max_removal=valve(config, force),
                dry_run=dry_run,
                fulltext=config.fulltext.enabled,
            )
            if report.stopped:  # a dry run the valve would stop: nothing more would happen
                return SyncResult(report, (), source.requests, dry_run=True)
            due = tuple(processing.due(config))
            # Who a processor may ask about what, only when one runs: it imports what makes the page,
            # which an unchanged sync never loads.
            audience = page_audience(config, catalogue_file) if due and not dry_run else None
            processed = [] if dry_run else processing.run_stage(config, store, clock, audience, progress)
        done = functools.partial(SyncResult, requests=source.requests, dry_run=dry_run, due=due)
        # A store that never exported goes on from the published exports.
        adopt_manifest(config.exports.dir, store)
        files = store.export_files()
        # Paths as strings: a record of 35,000 note pages made as many Path objects (0.3 s).
        expected = {str(path): files.get(str(path)) for path in pages} | files
        state = store.sync_state
        unchanged_pages = tuple((path, False) for path in pages)
        reused = plan.reuse(
            last,
            inputs,
            state.content_generation,
            state.notes_generation,
            lambda: all(record is not None and record.holds(path) for path, record in expected.items()),
        )
        if reused is plan.Reuse.ALL:
            ensure_manifest(config.exports.dir, store, dry_run)
            return done(report, unchanged_pages, processed=processed)
        if reused is plan.Reuse.NOTE_PAGES and last is not None:
            # Only notes changed since: the page rows are as they were, so are the heads of the note pages.
            remade = remake_note_pages(config, store, last, files, dry_run)
            if remade is not None:
                written = unchanged_pages + tuple(remade.written)
                return done(report, written, processed=processed, removed=tuple(remade.removed))
        catalogue = catalogue or catalogue_file.load()
        exported = _export_all(
            config,
            store,
            catalogue,
            catalogue_file.digest,
            inputs,
            files,
            clock,
            dry_run,
            valve(config, force),
        )
        # Once the page and its files are gone from memory: the manifest reads the rows anew.
        write_manifest(config.exports.dir, store, dry_run)
    return done(report, tuple(exported.written), processed=processed, removed=tuple(exported.removed))


def page_audience(config: Config, catalogue_file: CatalogueFile) -> processing.AudienceOf:
    """Who a processor may ask about what: the page's settings (imported only when it asks)."""
    from .page import PageAudience

    return PageAudience(config, catalogue_file)


def _export_all(
    config: Config,
    store: Store,
    catalogue: Catalogue,
    catalogue_digest: str | None,
    inputs: dict[str, str],
    files: dict[str, FileRecord],
    clock: digest.Clock,
    dry_run: bool = False,
    max_removal: float | None = None,
) -> WriteResult:
    """Every configured format rendered and written, CHANGES.md, the search index's catalogue side, and
    the export record, last. A page that would come out empty where the last sync's had rows is refused
    before anything is written, as `max_removal` (the valve; None: --force) says (`plan.raise_if_emptied`)."""
    from ..export.writer import write_exports
    from .changes import page_changes, record_changes
    from .page import export_input, kept_note_pages, merge_for, rows_under
    from .search import index_catalogue
    from .status import keep_status

    names = config.exports.formats
    last = ExportRecord.loads(store.sync_state.export_record)
    with bulk_phase():
        merged = merge_for(config, catalogue, store, names)
        if not merged.page.rows:  # the last page's rows are read only then
            before = store.catalogue_rows()
            why = (
                f"{config.catalog.name} names no category"
                if not catalogue.categories
                else ("the catalogue and exports.scope leave no row on it")
            )
            plan.raise_if_emptied(None if before is None else len(before), max_removal, why)
        store.remember(export_record=None)  # a run that stops half-way leaves no claim behind

        def under(other: Config) -> tuple[Placement, ...]:  # this sync's page under another config
            return rows_under(other, catalogue, merged.library)

        changes = page_changes(config, store, merged.page, clock, under)
        kept = kept_note_pages(config, store, last, inputs, files)
        given = export_input(merged, store, kept, changes.feed)
        made = [list(formats.get(name).render(given)) for name in names]
        result = write_exports(
            config.exports.dir,
            [outputs[0] for outputs in made],
            [output for outputs in made for output in outputs[1:]],
            files,
            dry_run,
        )
        result.written += record_changes(config, store, changes, dry_run)
        index_catalogue(store, catalogue, merged.reconciliation.matches, catalogue_digest)
        if not dry_run:  # `status` until the next change reads it: after CHANGES.md, whose rows it reads
            keep_status(config, store, catalogue, merged, catalogue_digest)
    record = ExportRecord(inputs, store.generation, store.sync_state.notes_generation)
    store.record_export(record.dumps(), result.records, result.made_from)
    return result


def remake_note_pages(
    config: Config, store: Store, last: ExportRecord, files: dict[str, FileRecord], dry_run: bool = False
) -> WriteResult | None:
    """A sync after pulls that changed only notes and annotations: each paper they touched that had a
    note page and still has notes gets its page made again from the head the last export recorded, and
    nothing else is read or rendered. None when that cannot be: a paper gained its first note or lost
    its last (its row's 📝 and Note link change), or the record has no head for its page."""
    from ..export import notes
    from ..export.writer import write_exports
    from .page import notes_on

    changed = store.papers_with_changed_notes(last.notes_generation)
    if changed is None or not notes_on(config):
        return None
    prefix = notes.folder_prefix(config.exports.dir)
    papers = store.paper_notes(changed)  # those of them that still have notes
    remake = plan.note_pages_to_remake(
        changed, papers.keys(), store.export_made_from(), lambda key: f"{prefix}{key}.md"
    )
    if remake is None:
        return None
    heads = {notes.page_path(key): head for key, head in remake.items()}
    store.remember(export_record=None)  # as for a whole export: a run that stops leaves no claim behind
    with bulk_phase():
        remade = list(notes.remade(heads, papers, config.exports.labels, config.exports.zotero_links))
        # Only these pages are the writer's to replace; every other file stays as the record has it.
        known = {path: files[path] for path in (prefix + f"{key}.md" for key in papers) if path in files}
        result = write_exports(config.exports.dir, [], remade, known, dry_run)
    # The rows of these pages alone (rewriting all 35,000 took 0.15 s), then the record, last.
    store.update_export_files(result.records, result.made_from, set(known) - set(result.records))
    store.remember(
        export_record=ExportRecord(last.inputs, last.generation, store.sync_state.notes_generation).dumps()
    )
    write_manifest(config.exports.dir, store, dry_run)
    return result
