"""`zotsync enrich [--dry-run] [--refresh]`: fill in missing venues, years and DOIs from the metadata
services now, whatever `enrich.enabled` says (zotsync/processing/enrich does the work)."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import digest
from ..catalogue import CatalogueFile
from ..config import Config
from ..gcpause import bulk_phase
from ..model import FoundMetadata
from ..processing import Job, Report
from ..processing.enrich import enrichment
from ..processing.enrich.run import Found, enrich
from ..processing.enrich.settings import NAME
from ..reconcile.venue import enriched_venue, load_venue_table
from ..store import exclusive_lock
from .page import PageAudience
from .stores import open_store

log = logging.getLogger("zotsync")


@dataclass(frozen=True, slots=True)
class ItemAnswer:
    """What the services answered about one item, as the command shows it."""

    zotero_key: str
    title: str
    outcome: str  # filled, ambiguous or not_found
    service: str = ""  # who filled it
    venue: str = ""  # the venue as the page shows it, when one is filled
    year: str = ""  # filled where Zotero has none
    doi: str = ""
    candidates: list[dict[str, Any]] = field(default_factory=list)

    def line(self, dry_run: bool) -> str:
        given = (("venue", self.venue), ("year", self.year), ("DOI", self.doi))
        filled = ", ".join(f"{what} {value}" for what, value in given if value)
        if self.outcome == "filled":
            verb = "would fill" if dry_run else "filled"
            return f"{verb} {self.zotero_key} {self.title}: {filled or 'nothing new'} (from {self.service})"
        seen = "; ".join(
            f"{c.get('service')}: {c.get('title')} ({c.get('venue') or '?'} {c.get('year') or ''})".rstrip()
            for c in self.candidates
        )
        return f"ambiguous {self.zotero_key} {self.title}: venue left unknown; candidates: {seen}"


@dataclass(frozen=True, slots=True)
class EnrichResult:
    report: Report
    answers: list[ItemAnswer]
    dry_run: bool

    def to_dict(self) -> dict[str, Any]:
        """The run's counts and each item's answer."""
        return {
            "dry_run": self.dry_run,
            "counts": dict(self.report.counts),
            "warnings": list(self.report.warnings),
            "answers": [asdict(answer) for answer in self.answers],
        }

    def summary(self) -> str:
        counts = self.report.counts
        would = "would fill" if self.dry_run else "filled"
        text = (
            f"enrichment: {counts['due']} items due, {would} {counts['filled']}; "
            f"{counts['ambiguous']} ambiguous, {counts['not_found']} not found, "
            f"{counts['waiting']} waiting; {counts['requests']} requests"
        )
        if self.dry_run:
            return text + " (dry run: nothing written)"
        if counts["filled"]:
            return text + " (`zotsync sync` or `zotsync export` puts them on the page)"
        return text


def run_enrich(
    config: Config, dry_run: bool = False, refresh: bool = False, clock: digest.Clock = digest.utc_now
) -> EnrichResult:
    """Ask the services about every item due (every item with `refresh`); a dry run keeps nothing."""
    settings = config.reconcile
    table = load_venue_table(settings.venues if settings.abbreviate_venues else None)
    answers: list[ItemAnswer] = []

    def shown(found: Found) -> None:
        if found.outcome != "not_found":
            answers.append(_answer(found, enrichment(found.value), table))

    with exclusive_lock(config.store), open_store(config, must_exist=True) as store, bulk_phase():
        audience = PageAudience(config, CatalogueFile.read(config.catalog, config.path))
        job = Job(config, store, NAME, config.enrich.deadline, clock, refresh, dry_run, audience=audience)
        run = enrich(job, on_found=shown)
    report = run.report()
    for warning in report.warnings:  # a service that failed: one line, and the command still succeeds
        log.warning(warning)
    return EnrichResult(report, answers, dry_run)


def _answer(found: Found, filled: FoundMetadata | None, table: Any) -> ItemAnswer:
    query, value = found.query, found.value
    if filled is None:
        return ItemAnswer(query.key, query.title, found.outcome, candidates=list(value.get("candidates", [])))
    gives_venue = "venue" in query.needs or ("published" in query.needs and filled.published)
    return ItemAnswer(
        query.key,
        query.title,
        found.outcome,
        service=filled.service,
        venue=enriched_venue(filled, table, query.year or filled.year) if gives_venue else "",
        year=filled.year,
        doi=filled.doi,
    )
