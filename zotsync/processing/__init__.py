"""The stage between the pull and the page: processors derive data from the library that Zotero does not
hold (a venue from a metadata service, say), keep it in the store, and hand it to the page.

A built-in processor is one module listed in BUILT_IN, whose PROCESSOR has:

- `name` (the key of its results in the store's `derived` table, of its report in `status`, and of its
  config section);
- `enabled(config)`: whether `sync` runs it (a command of its own may run it whatever this says);
- `run(job) -> Report`: derive what is due, within `job.deadline`, and save it with `job.save`; it must
  end by the deadline and never fail a sync for what a service does (it says so in its report);
- `attach(library, results) -> Library`: the library as the page sees it, with the results joined in:
  the metadata it found in the typed `Library.found`, which reconcile reads whoever filled it (the core
  names no processor), anything else in `Library.derived` under its name;
- optionally `settings`: the model of its config section (a dataclass of `config.setting` fields), read
  with the core's sections and given back by `config.section(name)`.

An installed package adds a processor through the `zotsync.processors` entry point (docs/plugins.md);
a program using zotsync as a library adds one for its run with `register`.

A processor that has nothing to do should learn it cheaply: `Job.remember` keeps a small note of its own
between runs (say, the store's content generation when it last found nothing due), which `Job.mark`
gives back, so that an unchanged library costs it no load of the page and no request.

Each result is a `Derived` record per item key: what it was made from (`inputs`, a digest the processor
chooses, so that an unchanged item is not asked about again), the value, and when it was made. Saving
a changed value bumps the store's content generation, so the next export renders with it; the
processor's settings are part of the config's digest, and its code of zotsync's, so the export record
covers everything a processor's results depend on.
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # the registry is read when a config is loaded: it imports neither the store nor the model
    from ..config import Config
    from ..model import Library
    from ..reconcile.scope import Audience
    from ..store import Store
    from ..store.derived import Derived

log = logging.getLogger("zotsync")

# Processor name → the module whose PROCESSOR it is, in the order `sync` runs them.
BUILT_IN: dict[str, str] = {
    "enrich": "zotsync.processing.enrich",
    "citations": "zotsync.processing.citations",
    "meaning": "zotsync.processing.meaning",
}
GROUP = "zotsync.processors"  # the entry-point group of processor plugins

__all__ = [
    "BUILT_IN",
    "AudienceOf",
    "Derived",
    "Job",
    "Processor",
    "Report",
    "attach_all",
    "get",
    "names",
    "register",
    "run_stage",
    "sections",
]


@dataclass(slots=True)
class Report:
    """What one run of a processor did, for `status`, `sync --json` and the log."""

    name: str
    counts: dict[str, int] = field(default_factory=dict)  # e.g. filled, ambiguous, not found, requests
    warnings: list[str] = field(default_factory=list)  # one line each, said once (a service was down)


@dataclass(slots=True)
class Job:
    """One run of one processor: the config, the store's library and the processor's own results."""

    config: Config
    store: Store
    name: str
    deadline: float  # seconds this run may take; what is left waits for the next run
    now: Callable[[], datetime]
    refresh: bool = False  # ask again about everything, whatever the results say
    dry_run: bool = False  # work out what would change, save nothing
    # Which items may leave the machine, and which first (the page's settings); None: every item.
    audience: AudienceOf | None = None
    progress: bool = False  # a long run may show a bar on a terminal (not under -q)

    def library(self) -> Library:
        """The library as the page reads it (items with their facts)."""
        return self.store.load_page(creators=True, attachments=False)

    def results(self) -> dict[str, Derived]:
        return self.store.derived(self.name)

    def save(self, results: Iterable[Derived], forget: Iterable[str] = ()) -> bool:
        """Keep `results` (and drop the items in `forget`); whether any value changed. Nothing is saved
        in a dry run."""
        if self.dry_run:
            return False
        return self.store.save_derived(self.name, results, forget)

    def mark(self) -> Any:
        """What this processor noted at the end of its last run (`remember`); None when nothing."""
        return _marks(self.store).get(self.name)

    def remember(self, mark: Any) -> None:
        """Note `mark` (JSON-shaped; None forgets it) for the next run. Not library content: the page is
        not rendered again for it. Nothing is noted in a dry run."""
        if self.dry_run:
            return
        marks = _marks(self.store)
        if mark is None:
            marks.pop(self.name, None)
        else:
            marks[self.name] = mark
        self.store.remember(processor_marks=json.dumps(marks, sort_keys=True) if marks else None)


def _marks(store: Store) -> dict[str, Any]:
    try:
        marks = json.loads(store.sync_state.processor_marks or "{}")
    except ValueError:  # a hand-edited store: the processors do their work and note it again
        return {}
    return marks if isinstance(marks, dict) else {}


class AudienceOf(Protocol):
    """The page's settings as they bear on a library: who may be asked about what (`Audience`)."""

    @property
    def digest(self) -> str:
        """Changes whenever the audience of an unchanged library may."""
        ...

    def __call__(self, library: Library) -> Audience: ...


@runtime_checkable
class Processor(Protocol):
    name: str

    def enabled(self, config: Config) -> bool: ...

    def run(self, job: Job) -> Report: ...

    def attach(self, library: Library, results: Mapping[str, Derived]) -> Library: ...


_extra: dict[str, Processor] = {}


def register(processor: Processor) -> Processor:
    """Add a processor for this run (a program using zotsync, a test), run after the built-in ones and
    the plugins'; before a config is loaded, when it has settings of its own."""
    _extra[processor.name] = processor
    return processor


def _plugins() -> dict[str, Processor]:
    from ..plugins import discovered

    return discovered(GROUP, Processor, tuple(BUILT_IN))


def names() -> tuple[str, ...]:
    """Every processor's name, in the order `sync` runs them: the built-in ones, the plugins', then
    those `register` added."""
    return tuple(dict.fromkeys([*BUILT_IN, *_plugins(), *_extra]))


def get(name: str) -> Processor:
    if name in _extra:
        return _extra[name]
    if name in BUILT_IN:
        return _built_in(BUILT_IN[name])
    return _plugins()[name]


@cache
def _built_in(module: str) -> Processor:
    processor: Processor = importlib.import_module(module).PROCESSOR
    return processor


def sections(plugins: bool = True) -> dict[str, type]:
    """Each processor's config section (its `settings`), by its name, in the order they run; without
    `plugins`, the built-in processors' alone."""
    found = {name: getattr(get(name), "settings", None) for name in (names() if plugins else BUILT_IN)}
    return {name: settings for name, settings in found.items() if isinstance(settings, type)}


def run_stage(
    config: Config,
    store: Store,
    now: Callable[[], datetime],
    audience: AudienceOf | None = None,
    progress: bool = False,
) -> list[Report]:
    """Every enabled processor, in order (the `sync` between its pull and its exports)."""
    reports = []
    for name in names():
        processor = get(name)
        if processor.enabled(config):
            job = Job(config, store, name, config.sync.deadline, now, audience=audience, progress=progress)
            report = processor.run(job)
            for warning in report.warnings:  # said once, here: a processor never fails the run for them
                log.warning(warning)
            reports.append(report)
    return reports


def due(config: Config) -> list[str]:
    """The processors `run_stage` would run, in order (what `sync --dry-run` names)."""
    return [name for name in names() if get(name).enabled(config)]


def attach_all(library: Library, results: Mapping[str, Mapping[str, Derived]]) -> Library:
    """The library with every processor's stored results joined in (`results`: name → key → record)."""
    for name in names():
        if results.get(name):
            library = get(name).attach(library, results[name])
    return library


def __getattr__(name: str) -> Any:
    """`Derived`, the store's record of a result, imported from the store when first named here."""
    if name == "Derived":
        from ..store.derived import Derived

        return Derived
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def report_json(reports: Iterable[Report]) -> dict[str, Any]:
    return {report.name: dict(report.counts) for report in reports}
