"""What a sync would do, decided before anything is done (octodns' Plan, vdirsyncer's actions).

A sync is *plan → apply*. The pull plan is read from the landing inside its open transaction: what the
pull adds, updates and removes, and which of the page's items leave with it; `raise_if_unsafe` is the
safety valve, and the landing then commits or rolls back. The export plan has one row per file: make,
keep, unchanged, remove — or leave, for a file zotsync may not touch — and the digest it is made from.
It is the one place that decides whether a file is written. `sync --dry-run` prints both and changes
nothing.

Before the export plan, what the last export may lend this one is decided here too (`reuse`,
`kept_note_pages`, `note_pages_to_remake`, `restricted`): render nothing, remake only some note pages,
keep some note pages as they are, or — for `export --format X` — touch only X's files.

Pure: values in, values out; the store and the files are read and written by the callers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TypeVar

from .errors import EmptiedPage, TooMuchRemoval
from .model import Changes

log = logging.getLogger("zotsync")
T = TypeVar("T")

# The safety valve refuses only a removal of at least this many items, so a tiny library can still lose
# one or two (half of a library of two is not a mass deletion).
MIN_REFUSED_REMOVAL = 3


def raise_if_emptied(before: int | None, max_removal: float | None, why: str) -> None:
    """The valve's other side, for a page about to come out with no rows where the last sync's had
    `before` (None: no sync recorded one): a catalogue saved as nothing, a scope changed by mistake. The
    same rule as a pull's, every row leaving; `why` says what emptied it."""
    if (
        max_removal is None
        or before is None
        or before < MIN_REFUSED_REMOVAL
        or before <= max_removal * before
    ):
        return
    raise EmptiedPage(
        f"this sync would empty the page ({before} entries at the last sync; {why}); the exports are left "
        "as they were. If you mean it, run the command again with --force"
    )


@dataclass(frozen=True, slots=True)
class PullPlan:
    """What landing one pull does once its items are written: the counts it reports, the items and
    collections it removes, and the page's items that leave with them."""

    items_added: int
    items_updated: int
    removed: tuple[str, ...]  # the item keys the store drops
    collections_removed: tuple[str, ...]
    collections_written: tuple[tuple[str, int, str, str | None], ...]  # (key, version, name, parent)
    on_page: frozenset[str] = frozenset()  # the page's items before the pull (read only for the valve)
    leaving: frozenset[str] = frozenset()  # those of them this pull takes off the page
    switching: bool = False  # the store held another source's library, which this pull replaces

    def raise_if_unsafe(self, max_removal: float | None) -> None:
        """octodns' TooMuchChange: the library emptied, another library behind the same id, a permission
        change hiding most items — refuse rather than publish an empty page. None: `--force`."""
        gone, of = len(self.leaving), len(self.on_page)
        if max_removal is not None and gone >= MIN_REFUSED_REMOVAL and gone > max_removal * of:
            raise TooMuchRemoval(
                f"this pull would remove {gone} of the {of} Zotero items on the page "
                f"({gone / of:.0%}; sync.max_removal allows {max_removal:.0%}); the store and "
                "the exports are left as they were. If the library really lost them, run the command "
                "again with --force"
            )
        if gone:
            log.debug("this pull removes %d of the %d Zotero items on the page", gone, of)


def leaving(on_page: Set[str], arrived: Mapping[str, bool], changes: Changes, switching: bool) -> set[str]:
    """The keys in `on_page` (regular, top-level, not trashed) that the pull would take off the page:
    arrived deleted, trashed or turned into a child item (`arrived` maps them to False); deleted; missing
    from a complete read; or missing from the library that replaces the store's when the source is
    another one (`switching`)."""
    wholesale = changes.complete or switching
    gone = set()
    for key in on_page:
        stays = arrived.get(key)
        if stays is not None:
            if not stays:
                gone.add(key)
        elif wholesale or key in changes.deleted_items:
            gone.add(key)
    return gone


class Step(Enum):
    """What a sync does with one file of the exports."""

    MAKE = "make"  # written: new, or its bytes change
    UNCHANGED = "unchanged"  # made again, and the file already holds those bytes
    KEEP = "keep"  # not made again: it stays as the last export left it
    REMOVE = "remove"  # zotsync's, no longer made, and as zotsync left it: it goes
    LEAVE = "leave"  # not zotsync's (or changed since): left as it is, and said so


@dataclass(frozen=True, slots=True)
class FileStep:
    path: Path
    step: Step
    digest: str = ""  # the SHA-256 of the bytes it is made of ("" for a file it removes or leaves)
    why: str = ""  # for LEAVE: the line that says so
    page: bool = False  # one of the page files, which change together
    made_from: str | None = None  # what the record keeps beside it (a note page's head)
    data: bytes = field(default=b"", repr=False, compare=False)  # the bytes MAKE or UNCHANGED write


@dataclass(slots=True)
class ExportPlan:
    """One row per file an export touches or decides not to touch, in the order it decided them."""

    steps: list[FileStep] = field(default_factory=list)

    def add(self, step: FileStep) -> None:
        self.steps.append(step)

    def paths(self, *steps: Step) -> list[Path]:
        return [each.path for each in self.steps if each.step in steps]


# -- what an export may reuse of the last one ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExportRecord:
    """What the last complete sync exported from: its inputs and the store's content and notes
    generations."""

    inputs: Mapping[str, str]
    generation: int
    notes_generation: int = -1  # -1: a record from before note pages, whose notes count as changed

    def dumps(self) -> str:
        return json.dumps(
            {"inputs": self.inputs, "generation": self.generation, "notes_generation": self.notes_generation},
            sort_keys=True,
        )

    @classmethod
    def loads(cls, text: str | None) -> ExportRecord | None:
        """None for a missing or unreadable record: the next sync renders."""
        if not text:
            return None
        try:
            raw = json.loads(text)
            return cls(dict(raw["inputs"]), int(raw["generation"]), int(raw.get("notes_generation", -1)))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


class Reuse(Enum):
    """What a sync may take from the last export instead of rendering."""

    ALL = "all"  # every file is as the last export left it, and would be again: render nothing
    NOTE_PAGES = "note pages"  # only notes changed: remake the note pages of the papers they touched
    NOTHING = "nothing"  # render the page and its files


def reuse(
    last: ExportRecord | None,
    inputs: Mapping[str, str],
    generation: int,
    notes_generation: int,
    files_hold: Callable[[], bool],
) -> Reuse:
    """The same inputs (code, config, catalogue, venue table) and the same store content (`generation`)
    as the last export, and its files still on disk as it wrote them (`files_hold`, asked last: it
    reads the disk), reuse it whole — or all but the note pages, when only the notes generation moved."""
    if last is None or dict(inputs) != dict(last.inputs) or generation != last.generation:
        return Reuse.NOTHING
    if not files_hold():
        return Reuse.NOTHING
    return Reuse.ALL if notes_generation == last.notes_generation else Reuse.NOTE_PAGES


def note_pages_to_remake(
    changed: Iterable[str], with_notes: Set[str], made_from: Mapping[str, str], page_of: Callable[[str], str]
) -> dict[str, str] | None:
    """For `Reuse.NOTE_PAGES`: each paper whose notes `changed` that had a note page and still has notes
    (`with_notes`) → the head its page was made from (`made_from`, by the page's recorded path,
    `page_of(key)`). None when a page must come or go (a paper gained its first note or lost its last:
    its row's 📝 and Note link change), or the record has no head for it: then the whole export renders."""
    heads = {}
    for key in changed:
        path = page_of(key)
        had_page = path in made_from
        if had_page != (key in with_notes):
            return None
        if had_page:
            heads[key] = made_from[path]
    return heads


def kept_note_pages(
    last: ExportRecord | None,
    inputs: Mapping[str, str],
    changed: Set[str] | None,
    made_from: Mapping[str, str],
    key_of: Callable[[str], str | None],
    holds: Callable[[str], bool],
) -> dict[str, str]:
    """For an export that renders: the note pages it need not make again if their heads come out the
    same (paper key → head) — those the last export made with the same code and config (the words of
    the page), whose notes no pull changed since (`changed`; None: unknown, so all), and which are still
    as it left them (`holds`, by recorded path)."""
    if last is None or changed is None:
        return {}
    if any(last.inputs.get(name) != inputs.get(name) for name in ("code", "config")):
        return {}
    kept = {}
    for path, head in made_from.items():
        key = key_of(path)
        if key is not None and key not in changed and holds(path):
            kept[key] = head
    return kept


def restricted(known: Mapping[str, T], made: Set[str], folder_prefix: str | None) -> dict[str, T]:
    """`export --format X`: the files of the record that X's plan may touch — those it makes now, and
    every file under `folder_prefix` (its note pages, when X makes them: one it no longer makes goes);
    every other format's files stay as they are."""
    return {
        path: record
        for path, record in known.items()
        if path in made or (folder_prefix is not None and path.startswith(folder_prefix))
    }
