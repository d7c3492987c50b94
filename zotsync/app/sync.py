"""`zotsync sync`: pull, then every configured export and the change digest, under one lock."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import digest, formats, processing
from ..catalogue import CatalogueFile
from ..config import Config
from ..export import ExportInput
from ..export.record import ExportRecord, export_inputs
from ..export.writer import write_exports
from ..gcpause import bulk_phase
from ..model import Placement
from ..sources import open_source
from ..store import exclusive_lock
from .changes import page_changes, record_changes
from .page import default_output, merge_for, plan, rows_under
from .pull import PullReport, pull, valve
from .search import index_catalogue
from .stores import open_store


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What one `sync` did: the pull, each file it wrote (or found unchanged), and the HTTP requests
    the source sent (0 for local sources)."""

    pull: PullReport
    written: tuple[tuple[Path, bool], ...]
    requests: int = 0
    processed: list[processing.Report] = field(default_factory=list)  # the processors' reports

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
            "processed": processing.report_json(self.processed),  # each processor's counts, by name
        }


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
            report = pull(source, store, full=full, max_removal=valve(config, force))
            processed = processing.run_stage(config, store, clock)
        files = store.export_files()
        expected = {path: files.get(str(path)) for path in pages} | {Path(p): r for p, r in files.items()}
        if last is not None and last.still_holds(inputs, store.generation, expected):
            return SyncResult(report, tuple((path, False) for path in pages), source.requests, processed)
        store.remember(export_record=None)  # a run that stops half-way leaves no claim behind
        with bulk_phase():
            catalogue = catalogue or catalogue_file.load()
            merged = merge_for(config, catalogue, store, names)
            shown = catalogue  # for the digest: this sync's page under the settings of the last one

            def under(other: Config) -> tuple[Placement, ...]:
                return rows_under(other, shown, merged.library)

            changes = page_changes(config, store, merged.page, clock, under)
            given = ExportInput(merged.page, merged.library, plan(config, merged.page), changes.feed)
            made = [list(formats.get(name).render(given)) for name in names]
            result = write_exports(
                config.exports.dir,
                [outputs[0] for outputs in made],
                [output for outputs in made for output in outputs[1:]],
                files,
            )
            written = result.written + record_changes(config, store, changes)
            index_catalogue(store, catalogue, merged.reconciliation.matches, catalogue_file.digest)
        record = ExportRecord(inputs, store.generation)
        store.record_export(record.dumps(), result.records)
    return SyncResult(report, tuple(written), source.requests, processed)
